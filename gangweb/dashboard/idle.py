"""The idle figure: idle GPUs by cause now, sampled into GPU-hours by namespace and gang (docs/idle.md).

``idle_now`` counts, from one reading's picture (the GPU map) and one activity reading (Prometheus,
``scheduler.activity``), the GPUs idle now under each cause of ``scheduler.idle.CAUSES``; each GPU under
one cause at most (a broken gang's GPUs are ``brokenGangs`` whatever their activity). ``record_sample``
(the Celery beat task ``gangweb.sample_idle``) stores them as an ``IdleSample`` covering the time since
the previous one; ``figure`` adds the samples of the last hour and day up for one reader.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings

from gangweb.access.scope import Scope
from gangweb.dashboard.models import IdleSample
from scheduler import activity, podstate
from scheduler.cluster import ReportsActivity
from scheduler.engine.gangkey import GangKey, gang_key_of
from scheduler.engine.resources import pod_gpus
from scheduler.engine.typed_objects import timestamp_or_none
from scheduler.idle import (
    ALLOCATED_IDLE,
    BROKEN_GANGS,
    CAUSES,
    FREE_WHILE_WAITING,
    HELD_FOR_UNPLACED,
    gpu_hours,
)

logger = logging.getLogger(__name__)

# Two days of samples are kept (the figure's longest span is one).
KEEP = timedelta(days=2)

Row = tuple[str, str, str]  # (namespace, gang, cause); ("", "", cause) for the cluster's free GPUs


def idle_now(
    picture: dict[str, Any],
    objects: list[dict[str, Any]],
    reading: activity.Reading,
    *,
    bound: dict[str, dict[str, Any]],
    now: float,
    window: float,
    reserved: dict[str, str] | None = None,
) -> tuple[dict[Row, float], int]:
    """Idle GPUs now by (namespace, gang, cause), and the GPUs whose activity could not be joined.
    ``bound`` holds ``objects``' live bound pods by key (the reading's index); ``reserved`` (pod key ->
    node) is the room gangweb made for preemptors whose pods still wait
    (``scheduler.preemption.planning.reservations``)."""
    gangs = picture["gangs"]
    out: dict[Row, float] = {}

    def add(gang: dict[str, Any] | None, cause: str, gpus: float) -> None:
        if gpus > 0:
            key = (gang["namespace"], gang["name"], cause) if gang else ("", "", cause)
            out[key] = out.get(key, 0.0) + gpus

    waiting = [g for g in gangs if g["state"] == "waiting"]
    held: dict[int, int] = {}
    free: dict[str, int] = {}  # node -> its free GPUs
    for node in picture["nodes"]:
        usable = node["ready"] and not node["cordoned"]
        nominated = node.get("nominated") or [None] * len(node["gpus"])
        for owner, nominee in zip(node["gpus"], nominated, strict=False):
            if owner is not None:
                held[owner] = held.get(owner, 0) + 1
            elif nominee is not None:
                add(gangs[nominee], HELD_FOR_UNPLACED, 1)
            elif usable:
                free[node["name"]] = free.get(node["name"], 0) + 1
    if reserved:  # free GPUs gangweb reserved for a pending pod of a preemptor: held for its gang
        by_gang_key = {g["key"]: g for g in gangs}
        for pod in objects:
            if pod.get("kind") != "Pod":
                continue
            meta = pod.get("metadata") or {}
            pod_key = f"{meta.get('namespace')}/{meta.get('name')}"
            node_name = reserved.get(pod_key)
            if node_name is None:
                continue
            # A pod in no PodGroup: a lone GPU pod, its gang keyed by its pod's key (gangweb.clusterview.walk).
            gang = by_gang_key.get(podstate.gang_key_of_pod(pod) or GangKey(pod_key))
            if (
                gang is None
                or podstate.is_bound(pod)
                or not podstate.is_live(pod)
                or (pod.get("status") or {}).get("nominatedNodeName")  # counted as nominated above
            ):
                continue
            taken = min(pod_gpus(pod), free.get(node_name, 0))
            if taken:
                free[node_name] -= taken
                add(gang, HELD_FOR_UNPLACED, taken)
    if waiting:
        add(None, FREE_WHILE_WAITING, sum(free.values()))
    settled: set[GangKey] = set()  # gangs whose GPUs are counted under a cause already
    for index, gang in enumerate(gangs):
        if gang.get("broken"):
            add(gang, BROKEN_GANGS, held.get(index, 0))
            settled.add(gang["key"])
        elif gang["state"] == "waiting" and held.get(index):
            add(gang, HELD_FOR_UNPLACED, held[index])
            settled.add(gang["key"])
    if reading.state != activity.OK:
        return out, 0
    joined = activity.join(reading.series, bound, objects)
    by_gang_key = {g["key"]: g for g in gangs}
    for pod_key, gpus in joined.pods.items():
        pod = bound[pod_key]
        gang = by_gang_key.get(podstate.gang_key_of_pod(pod) or GangKey(pod_key))
        if gang is None or gang["key"] in settled:
            continue
        started = timestamp_or_none((pod.get("status") or {}).get("startTime"))
        if started is None or now - started < window:
            continue  # not running for a whole window yet: its activity says nothing about idleness
        add(gang, ALLOCATED_IDLE, gpus)
    return out, joined.unknown


def read_activity(cluster: object = None) -> activity.Reading:
    """The activity source's answer: Prometheus when ``GANGWEB_PROMETHEUS_URL`` is set, else a cluster that
    reports its own GPUs' activity in dcgm-exporter's shape (the demo's simulation), else missing."""
    if not settings.GANGWEB_PROMETHEUS_URL and isinstance(cluster, ReportsActivity):
        rows = activity.count_idle(cluster.dcgm_series(), settings.GANGWEB_IDLE_THRESHOLD)
        return activity.Reading(activity.OK, rows, detail="the simulation's dcgm-exporter-shaped activity")
    return activity.query(
        settings.GANGWEB_PROMETHEUS_URL,
        window_seconds=settings.GANGWEB_IDLE_WINDOW_SECONDS,
        threshold=settings.GANGWEB_IDLE_THRESHOLD,
        token=settings.GANGWEB_PROMETHEUS_TOKEN,
        timeout=settings.GANGWEB_PROMETHEUS_TIMEOUT_SECONDS,
    )


def gang_queues(cluster: object, objects: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """The queue each gang runs or waits in, where a queue manager's objects say (``scheduler/queues``):
    read from the watch cache's live snapshot where there is one, else from ``objects`` parsed."""
    from scheduler.cluster import WatchCache
    from scheduler.engine import parse_snapshot
    from scheduler.queues import read_queues

    try:
        snapshot = (
            cluster.live_snapshot().snapshot() if isinstance(cluster, WatchCache) else parse_snapshot(objects)
        )
        return read_queues(objects, snapshot).gangs
    except ValueError as exc:  # a malformed object (SnapshotError too): the figure without queues, logged
        logger.warning("idle figure without queues: %s", exc)
        return {}


def record_sample() -> IdleSample:
    """Sample the idle GPUs now (one reading of the cluster, one query) and keep it."""
    from gangweb.clusterview import reading as readings
    from scheduler.preemption import metrics
    from scheduler.preemption.planning import reservations
    from scheduler.preemption.runtime import get_cluster

    cluster = get_cluster()
    taken = readings.take(cluster, max_age=settings.GANGWEB_IDLE_SAMPLE_SECONDS / 2)
    source = read_activity(cluster)
    counted, unknown = idle_now(
        taken.picture,
        taken.objects,
        source,
        bound=taken.bound,
        now=taken.time,
        window=settings.GANGWEB_IDLE_WINDOW_SECONDS,
        reserved=reservations(None),  # every gang's
    )
    queues = gang_queues(cluster, taken.objects)
    at = datetime.fromtimestamp(time.time(), UTC)
    previous = IdleSample.objects.order_by("-at").values_list("at", flat=True).first()
    period = float(settings.GANGWEB_IDLE_SAMPLE_SECONDS)
    seconds = min(2 * period, (at - previous).total_seconds()) if previous else period
    sample = IdleSample.objects.create(
        at=at,
        seconds=max(0.0, seconds),
        rows=[  # namespace, gang, cause, GPUs, the gang's queue ([system, name]) or None
            [ns, name, cause, round(gpus, 3), queues.get(gang_key_of(ns, name))]
            for (ns, name, cause), gpus in sorted(counted.items())
        ],
        activity=source.state,
        detail=source.detail,
        unknown_gpus=unknown,
    )
    metrics.observe_idle(
        {c: sum(g for (_, _, cause), g in counted.items() if cause == c) for c in CAUSES}, seconds
    )
    IdleSample.objects.filter(at__lt=at - KEEP).delete()
    return sample


def _zero() -> dict[str, float]:
    return dict.fromkeys(CAUSES, 0.0)


def _seen(sample: IdleSample, scope: Scope) -> list[list[Any]]:
    """The rows of a sample one reader sees: those of their namespaces, and the cluster's free GPUs (no
    namespace: every reader's map shows them)."""
    return [row for row in sample.rows if not row[0] or scope.sees(row[0])]


def per_hour(scope: Scope, days: int) -> list[dict[str, Any]]:
    """Idle GPU-hours by cause per hour of the last ``days``, as one reader sees them, oldest first
    (``[{"at": the hour's start, <cause>: GPU-hours}]``); an hour without a sample is left out: nothing
    was measured then, which is not nothing idle."""
    hours: dict[datetime, dict[str, float]] = {}
    since = datetime.now(UTC) - timedelta(days=days)
    for sample in IdleSample.objects.filter(at__gte=since).order_by("at"):
        block = hours.setdefault(sample.at.replace(minute=0, second=0, microsecond=0), _zero())
        for _namespace, _name, cause, gpus, *_queue in _seen(sample, scope):
            block[cause] += gpus * sample.seconds
    return [
        {"at": hour.isoformat(), **{cause: gpu_hours(value) for cause, value in block.items()}}
        for hour, block in sorted(hours.items())
    ]


def figure(scope: Scope) -> dict[str, Any]:
    """The idle figure for one reader: GPU-hours by cause over the last hour and day, per namespace, per
    gang and per queue of the reader's namespaces (a queue's figure adds up the gangs in it the reader
    sees; the cluster's free GPUs count for every reader: the map shows them, and belong to no queue),
    the GPUs idle now, and the activity source's state."""
    now = datetime.now(UTC)
    hour, day = now - timedelta(hours=1), now - timedelta(days=1)
    spans = {"lastHour": _zero(), "lastDay": _zero()}
    namespaces: dict[str, dict[str, dict[str, float]]] = {}
    gangs: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    queues: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    latest = None
    for sample in IdleSample.objects.filter(at__gte=day).order_by("at"):
        latest = sample
        names = ("lastDay", "lastHour") if sample.at >= hour else ("lastDay",)
        for namespace, name, cause, gpus, *queue in _seen(sample, scope):
            seconds = gpus * sample.seconds
            for span in names:
                spans[span][cause] += seconds
                if namespace:
                    namespaces.setdefault(namespace, {"lastHour": _zero(), "lastDay": _zero()})[span][
                        cause
                    ] += seconds
                    gangs.setdefault((namespace, name), {"lastHour": _zero(), "lastDay": _zero()})[span][
                        cause
                    ] += seconds
                if queue and queue[0]:  # rows sampled before queues were kept have none
                    system, queue_name = queue[0]
                    queues.setdefault((system, queue_name), {"lastHour": _zero(), "lastDay": _zero()})[span][
                        cause
                    ] += seconds

    def hours(block: dict[str, float]) -> dict[str, float]:
        return {cause: gpu_hours(value) for cause, value in block.items()}

    current = _zero()
    if latest is not None and latest.at >= now - timedelta(seconds=3 * settings.GANGWEB_IDLE_SAMPLE_SECONDS):
        for _namespace, _name, cause, gpus, *_queue in _seen(latest, scope):
            current[cause] += gpus
    by_gang = sorted(gangs.items(), key=lambda item: (-sum(item[1]["lastDay"].values()), item[0]))
    return {
        "lastHour": hours(spans["lastHour"]),
        "lastDay": hours(spans["lastDay"]),
        "now": {cause: round(value, 2) for cause, value in current.items()},
        "byNamespace": [
            {"namespace": ns, "lastHour": hours(v["lastHour"]), "lastDay": hours(v["lastDay"])}
            for ns, v in sorted(namespaces.items())
        ],
        "byGang": [
            {"namespace": ns, "name": name, "lastHour": hours(v["lastHour"]), "lastDay": hours(v["lastDay"])}
            for (ns, name), v in by_gang[:100]
        ],
        "byQueue": [
            {
                "system": system,
                "queue": name,
                "lastHour": hours(v["lastHour"]),
                "lastDay": hours(v["lastDay"]),
            }
            for (system, name), v in sorted(queues.items())
        ],
        "activity": {
            "state": latest.activity
            if latest
            else activity.MISSING
            if not settings.GANGWEB_PROMETHEUS_URL
            else "unsampled",
            "detail": latest.detail if latest else "no idle sample taken yet",
            "at": latest.at.isoformat() if latest else None,
            "unknownGpus": latest.unknown_gpus if latest else 0,
        },
    }
