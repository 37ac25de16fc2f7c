"""The cluster this process talks to, built once from settings.

``get_cluster()`` is the one way for tasks, views and consumers to reach the configured ``Cluster``:
the simulated cluster of the demo (``GANGWEB_CLUSTER=simulated``) or the Kubernetes adapter.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from django.conf import settings

from scheduler.cluster import Closable, Cluster
from scheduler.nativemetrics import NativeMetrics, NativeReading, Scrape, Unconfigured

_lock = threading.Lock()
_cluster: Cluster | None = None
_built_in: int | None = None  # the pid that built _cluster: a forked child (Celery prefork) builds its own
_listeners: list[Callable[[Cluster], None]] = []


def get_cluster() -> Cluster:
    """The process-wide ``Cluster`` singleton (created on first use in each process).

    With ``GANGWEB_CLUSTER=kube`` and ``GANGWEB_WATCH`` (the default) it is this process's watch cache: the
    informers start here (reads wait until every kind is listed), and a forked child, which inherits no
    threads, builds and starts its own on first use."""
    global _cluster, _built_in
    with _lock:
        if _cluster is None or (_built_in is not None and _built_in != os.getpid()):
            _cluster = _build_cluster()
            _built_in = os.getpid()
            for listener in _listeners:
                listener(_cluster)
        return _cluster


def built_cluster() -> Cluster | None:
    """The cluster ``get_cluster`` built (or was given) in this process, None when there is none yet: for
    side writes (Kubernetes Events) that must not build one where the process never needed a cluster."""
    with _lock:
        if _cluster is None or (_built_in is not None and _built_in != os.getpid()):
            return None
        return _cluster


def on_cluster_built(listener: Callable[[Cluster], None]) -> None:
    """Call ``listener(cluster)`` each time this module builds a cluster (the app's ``ready`` hooks the
    watch trigger in here)."""
    if listener not in _listeners:
        _listeners.append(listener)


def _build_cluster() -> Cluster:
    if settings.GANGWEB_CLUSTER == "simulated":
        from scheduler.simulation import SimulatedCluster

        simulated = SimulatedCluster(
            nodes=settings.GANGWEB_SIM_NODES,
            seed=settings.GANGWEB_SIM_SEED,
            devices=settings.GANGWEB_SIM_DEVICES,
            queues=settings.GANGWEB_SIM_QUEUES,
        )
        simulated.loss_ticks = settings.GANGWEB_SIM_LOSS_TICKS
        return simulated
    from scheduler.kube import KubeCluster

    # KUBECONFIG wins when set (tests point it at the local API test server); else in-cluster.
    read = float(settings.GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS)
    cluster = KubeCluster.from_environment(timeout=(min(5.0, read), read))
    if settings.GANGWEB_WATCH:
        from scheduler.preemption.detection import pod_gang
        from scheduler.queues.ownership import ownership_marks

        # The pods by gang (the watch trigger's detection) and by ownership signal (planning), filed as
        # the start-up list arrives rather than by their first reader.
        for func in (pod_gang, ownership_marks):
            cluster.add_index("Pod", func)
        # Readers wait for the sync (KubeCluster.sync_timeout). Indexed in the background after each quiet
        # moment: a plan on 20,000 nodes then finds its snapshot ready instead of spending 1.4 s indexing.
        cluster.start(wait=False, index=True)
    return cluster


def set_cluster(cluster: Cluster) -> None:
    """Use ``cluster`` as this process's cluster (tests, and the demo's shared simulation)."""
    global _cluster, _built_in
    with _lock:
        _cluster, _built_in = cluster, None


def reset_cluster() -> None:
    """Forget the singleton (tests build a fresh one per case); a watch cache built here is closed."""
    global _cluster, _built_in
    with _lock:
        cluster, _cluster = _cluster, None
        if _built_in == os.getpid() and isinstance(cluster, Closable):
            cluster.close()
        _built_in = None


# --- modes: the one place a namespace's mode is decided (docs/pipeline.md, "Modes") ------------------

OBSERVE = "observe"  # models.Mode.OBSERVE; this module stays importable without the models


def mode_for(namespace: str) -> str:
    """``enforce``, ``observe`` or ``approve`` for a namespace: GANGWEB_NAMESPACE_MODES, else GANGWEB_MODE.

    Detection opens a gang's request in its namespace's mode, observe mode records kube-scheduler's
    victims only for preemptors in observe namespaces, and nothing else reads the two settings."""
    return settings.GANGWEB_NAMESPACE_MODES.get(namespace, settings.GANGWEB_MODE)


def observes_any_namespace() -> bool:
    """Whether ``mode_for`` answers ``observe`` for some namespace (then each detection pass also reads
    what kube-scheduler preempted): the default mode is observe, or an override is."""
    return OBSERVE in (settings.GANGWEB_MODE, *settings.GANGWEB_NAMESPACE_MODES.values())


def reaper_for(namespace: str) -> str:
    """``report`` or ``evict``: what the reaper does with a broken gang of ``namespace``
    (GANGWEB_NAMESPACE_REAPERS, else GANGWEB_REAPER; docs/idle.md "The reaper")."""
    return settings.GANGWEB_NAMESPACE_REAPERS.get(namespace, settings.GANGWEB_REAPER)


def notice_seconds_for(namespace: str) -> int:
    """How many seconds of notice a victim in ``namespace`` gets before it is evicted (0: none):
    GANGWEB_NAMESPACE_PREEMPTION_NOTICE_SECONDS, else GANGWEB_PREEMPTION_NOTICE_SECONDS (docs/design.md "Notice")."""
    return settings.GANGWEB_NAMESPACE_PREEMPTION_NOTICE_SECONDS.get(
        namespace, settings.GANGWEB_PREEMPTION_NOTICE_SECONDS
    )


_native: tuple[tuple[str, ...], float, NativeReading] | None = None
NATIVE_READ_SECONDS = 10.0  # one read of kube-scheduler's metrics serves every page asking this long


def native_metrics() -> NativeMetrics:
    """kube-scheduler's metrics source the settings name (``GANGWEB_SCHEDULER_METRICS_*``)."""
    if not settings.GANGWEB_SCHEDULER_METRICS_URL:
        return Unconfigured()
    return Scrape(
        settings.GANGWEB_SCHEDULER_METRICS_URL,
        cafile=settings.GANGWEB_SCHEDULER_METRICS_CA,
        certfile=settings.GANGWEB_SCHEDULER_METRICS_CERT,
        keyfile=settings.GANGWEB_SCHEDULER_METRICS_KEY,
        token=settings.GANGWEB_SCHEDULER_METRICS_TOKEN,
        timeout=2.0,
    )


def native_reading() -> NativeReading:
    """kube-scheduler's preemption figures, read at most once per ``NATIVE_READ_SECONDS`` per process."""
    global _native
    key = (settings.GANGWEB_SCHEDULER_METRICS_URL, settings.GANGWEB_SCHEDULER_METRICS_CA)
    now = time.monotonic()
    if _native is not None and _native[0] == key and now - _native[1] < NATIVE_READ_SECONDS:
        return _native[2]
    read = native_metrics().read()
    _native = (key, now, read)
    return read
