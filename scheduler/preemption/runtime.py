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

        return SimulatedCluster(
            nodes=settings.GANGWEB_SIM_NODES,
            seed=settings.GANGWEB_SIM_SEED,
            devices=settings.GANGWEB_SIM_DEVICES,
        )
    from scheduler.kube import KubeCluster

    # KUBECONFIG wins when set (tests point it at the local API test server); else in-cluster. Informers
    # are not started here: each read lists afresh, which is what execution needs and keeps forked
    # Celery children free of watch threads inherited from their parent.
    read = float(settings.GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS)
    return KubeCluster.from_environment(timeout=(min(5.0, read), read))


def set_cluster(cluster: Cluster) -> None:
    """Use ``cluster`` as this process's cluster (tests, and the demo's shared simulation)."""
    global _cluster
    with _lock:
        _cluster = cluster


def reset_cluster() -> None:
    """Forget the singleton (tests build a fresh one per case)."""
    global _cluster
    with _lock:
        _cluster = None


# --- modes: the one place a namespace's mode is decided (docs/pipeline.md, "Modes") ------------------

OBSERVE = "observe"  # models.Mode.OBSERVE; this module stays importable without the models


def mode_for(namespace: str) -> str:
    """``enforce`` or ``observe`` for a namespace: GANGWEB_NAMESPACE_MODES, else GANGWEB_MODE.

    Detection opens a gang's request in its namespace's mode, observe mode records kube-scheduler's
    victims only for preemptors in observe namespaces, and nothing else reads the two settings."""
    return settings.GANGWEB_NAMESPACE_MODES.get(namespace, settings.GANGWEB_MODE)


def observes_any_namespace() -> bool:
    """Whether ``mode_for`` answers ``observe`` for some namespace (then each detection pass also reads
    what kube-scheduler preempted): the default mode is observe, or an override is."""
    return OBSERVE in (settings.GANGWEB_MODE, *settings.GANGWEB_NAMESPACE_MODES.values())
