"""Prometheus metrics of the preemption pipeline.

Named after kube-scheduler's ``scheduler_podgroup_preemption_*`` family so dashboards built for one
read naturally for the other. They register in the worker's own registry (``REGISTRY``), which
``serve_worker_metrics`` serves: one registry per process role.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)

if TYPE_CHECKING:
    from scheduler.preemption.models import Plan

REGISTRY = CollectorRegistry()

ATTEMPTS = Counter(
    "gangweb_podgroup_preemption_attempts_total",
    "Preemption requests that finished, by result (succeeded, failed, infeasible, superseded).",
    ["result"],
    registry=REGISTRY,
)
PLAN_DURATION = Histogram(
    "gangweb_podgroup_preemption_plan_duration_seconds",
    "Time to compute a preemption plan for one pod group (engine, all domains).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
VICTIMS = Histogram(
    "gangweb_podgroup_preemption_victims",
    "Victim units chosen by a feasible plan.",
    buckets=(0, 1, 2, 4, 8, 16, 32, 64, 128, 256),
    registry=REGISTRY,
)
EVICTED_GPUS = Counter(
    "gangweb_podgroup_preemption_evicted_gpus_total",
    "GPUs freed by evictions gangweb carried out.",
    registry=REGISTRY,
)
LOST_GPU_SECONDS = Counter(
    "gangweb_podgroup_preemption_lost_gpu_seconds_total",
    "GPU-seconds of work the victims of executed plans had done (lost unless they checkpointed).",
    registry=REGISTRY,
)
EVICTIONS = Counter(
    "gangweb_podgroup_preemption_evictions_total",
    "Eviction API calls by kind (dry_run, evict) and HTTP code.",
    ["kind", "code"],
    registry=REGISTRY,
)
IDLE_GPUS = Gauge(
    "gangweb_idle_gpus",
    "GPUs idle at the last idle sample, by cause (docs/idle.md).",
    ["cause"],
    registry=REGISTRY,
    multiprocess_mode="mostrecent",
)
IDLE_GPU_SECONDS = Counter(
    "gangweb_idle_gpu_seconds_total",
    "GPU-seconds idle, by cause, as the idle samples counted them (docs/idle.md).",
    ["cause"],
    registry=REGISTRY,
)


for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)


# The shared directory holds every family a worker process created, the web's too (the worker imports its
# modules): the worker serves only the pipeline's.
_PIPELINE_FAMILIES = frozenset(
    family.name
    for metric in (
        ATTEMPTS,
        PLAN_DURATION,
        VICTIMS,
        EVICTED_GPUS,
        LOST_GPU_SECONDS,
        EVICTIONS,
        IDLE_GPUS,
        IDLE_GPU_SECONDS,
    )
    for family in metric.describe()
)


class _Only:
    def __init__(self, collector, names: frozenset[str]) -> None:
        self.collector, self.names = collector, names

    def collect(self):
        return [family for family in self.collector.collect() if family.name in self.names]


def observe_plan(plan: Plan, planning_seconds: float) -> None:
    if plan.source != "engine":
        return
    PLAN_DURATION.observe(planning_seconds)
    if plan.feasible:
        VICTIMS.observe(plan.victim_units)


def serve_worker_metrics(port: int) -> None:
    """Serve this Celery worker's metrics on ``port`` (``/metrics``).

    Tasks run in the prefork pool's child processes; their samples only reach this endpoint when
    ``PROMETHEUS_MULTIPROC_DIR`` names a directory shared by the worker's processes (prometheus_client's
    multiprocess mode, chosen when the library is imported, so it must be in the worker's environment).
    """
    import logging
    import os

    from prometheus_client import start_http_server

    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        registry.register(_Only(multiprocess.MultiProcessCollector(None), _PIPELINE_FAMILIES))
        registry.register(PROCESS_COLLECTOR)
    else:
        logging.getLogger(__name__).warning(
            "PROMETHEUS_MULTIPROC_DIR is not set: samples of prefork pool processes will be missing"
        )
    start_http_server(port, registry=registry)


def observe_idle(gpus_by_cause: dict[str, float], seconds: float) -> None:
    """One idle sample: the GPUs idle now by cause, idle for ``seconds`` since the previous one."""
    for cause, gpus in gpus_by_cause.items():
        IDLE_GPUS.labels(cause=cause).set(gpus)
        IDLE_GPU_SECONDS.labels(cause=cause).inc(gpus * seconds)
