"""The cluster this process talks to, built once from settings.

``get_cluster()`` is the one way for tasks, views and consumers to reach the configured ``Cluster``:
the simulated cluster of the demo (``GANGWEB_CLUSTER=simulated``) or the Kubernetes adapter.
"""

from __future__ import annotations

import threading

from django.conf import settings

from scheduler.cluster import Cluster

_lock = threading.Lock()
_cluster: Cluster | None = None


def get_cluster() -> Cluster:
    """The process-wide ``Cluster`` singleton (created on first use)."""
    global _cluster
    with _lock:
        if _cluster is None:
            _cluster = _build_cluster()
        return _cluster


def _build_cluster() -> Cluster:
    if settings.GANGWEB_CLUSTER == "simulated":
        from scheduler.simulation import SimulatedCluster

        return SimulatedCluster(nodes=settings.GANGWEB_SIM_NODES, seed=settings.GANGWEB_SIM_SEED)
    raise NotImplementedError("GANGWEB_CLUSTER=kube: the Kubernetes adapter is not wired here yet")


def reset_cluster() -> None:
    """Forget the singleton (tests build a fresh one per case)."""
    global _cluster
    with _lock:
        _cluster = None
