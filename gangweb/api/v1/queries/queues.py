"""The queues of the cluster's queue managers (``scheduler/queues``) as API rows, cut to the reader.

Which queues a reader of some namespaces sees (docs/queues.md "Who sees which queue"): the LocalQueues in
those namespaces, and the cluster-scoped queues those namespaces use (their gangs run or wait in it, or,
for Kueue, one of their LocalQueues points to it), with the parents above them. Figures of a visible queue
are shown whole (amounts name nobody); its pending gangs only in the reader's namespaces.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from prometheus_client import Gauge

from gangweb.access.scope import Scope
from gangweb.clusterview import rows as cluster_rows
from scheduler.engine import parse_snapshot
from scheduler.engine.gangkey import GangKey
from scheduler.queues import queues_from
from scheduler.queues.blockers import Waits
from scheduler.queues.cluster import build_reading
from scheduler.queues.model import Queue, QueueModel

logger = logging.getLogger(__name__)

QUEUE_FIGURES = Gauge(
    "gangweb_queue_resource",
    "A queue's figure per resource as its queue manager defines it (docs/queues.md): guaranteed, used, borrowed, lent",
    ["system", "queue", "resource", "figure"],
)
QUEUE_PENDING = Gauge("gangweb_queue_pending_gangs", "Gangs waiting in the queue", ["system", "queue"])

_lock = threading.Lock()
# The reading the model was built from, the model with its queue reading and snapshot, and each queue's row.
_built: tuple[Any, Waits, dict[tuple[str, str], dict[str, Any]]] | None = None
_building = False
# The gangs that wait: a blocker is worked out for these only (docs/queues.md "Why a gang waits").
WAITING_STATES = frozenset({"pending", "short", "running-partly"})


def current_waits() -> Waits:
    """The queue model of the cluster view's reading with the queue reading and snapshot it was read from, built
    once per reading. The first is built on the caller's thread; after that a newer reading's is built by
    one background thread while the previous one is served (a model of 500 queues over 20,000 nodes takes
    seconds, which no request should wait for), as the cluster rows are (``GANGWEB_API_CLUSTER_CACHE_SECONDS``
    at 0: every call builds its own, as they do)."""
    return _current()[1]


def _current() -> tuple[Any, Waits, dict[tuple[str, str], dict[str, Any]]]:
    global _building
    reading = cluster_rows.cluster_view().reading
    with _lock:
        built = _built
        if built is not None and built[0] is reading:
            return built
        fresh_each_time = float(getattr(settings, "GANGWEB_API_CLUSTER_CACHE_SECONDS", 5)) <= 0
        if built is not None and built[0].cluster is reading.cluster and not fresh_each_time:
            if not _building:
                _building = True
                threading.Thread(
                    target=_build_in_background, args=(reading,), name="gangweb-queues", daemon=True
                ).start()
            return built
    return _build(reading)


def _build(reading) -> tuple[Any, Waits, dict[tuple[str, str], dict[str, Any]]]:
    global _built
    objects = reading.objects
    snapshot = parse_snapshot(objects)
    queue_reading = build_reading(objects, snapshot)
    waits = Waits(queues_from(queue_reading), queue_reading, snapshot)
    rows = {q.key: q.to_dict() for q in waits.model.queues}
    _export(waits.model, rows)
    built = (reading, waits, rows)
    with _lock:
        if _built is None or _built[0].started <= reading.started:
            _built = built
    return built


def _build_in_background(reading) -> None:
    global _building
    try:
        _build(reading)
    except Exception:
        logger.exception("cannot build the queue model")
    finally:
        _building = False


def forget() -> None:
    """Drop the built model (tests)."""
    global _built
    with _lock:
        _built = None


def current_model() -> QueueModel:
    """The model of the cluster view's reading, built once per reading."""
    return current_waits().model


def gang_queue(waits: Waits, gang_key: GangKey) -> dict[str, str] | None:
    """The queue a gang runs or waits in, ``{"system", "name"}``; None when it is in none."""
    found = waits.model.gangs.get(gang_key)
    return {"system": found[0], "name": found[1]} if found else None


def gang_blocker(waits: Waits, row: dict[str, Any], verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """Why a waiting gang waits: the queue side first, then gangweb's last plan of it (its verdict)."""
    if row["state"] not in WAITING_STATES:
        return None
    outcome = (verdict or {}).get("outcome")
    found = waits.of_outcome(row["podGroup"], outcome, (verdict or {}).get("reason") or "")
    return found.to_dict() if found is not None else None


def _export(model: QueueModel, rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    QUEUE_FIGURES.clear()
    QUEUE_PENDING.clear()
    for queue in model.queues:
        row = rows[queue.key]
        for resource, figures in row["resources"].items():
            for figure in ("guaranteed", "used", "borrowed", "lent"):
                QUEUE_FIGURES.labels(queue.system, queue.name, resource, figure).set(figures[figure])
        QUEUE_PENDING.labels(queue.system, queue.name).set(len(queue.pending))


def _visible(model: QueueModel, scope: Scope) -> list[Queue]:
    if scope.all_namespaces:
        return list(model.queues)
    seen = {
        q.key
        for q in model.queues
        if (q.namespace and scope.sees(q.namespace))
        or (not q.namespace and any(scope.sees(ns) for ns in q.namespaces))
    }
    by_key = {q.key: q for q in model.queues}
    for key in list(seen):  # the parents above a visible queue
        parent = by_key[key].parent
        while parent and (key[0], parent) in by_key and (key[0], parent) not in seen:
            seen.add((key[0], parent))
            parent = by_key[(key[0], parent)].parent
    return [q for q in model.queues if q.key in seen]


def _row(queue: Queue, rows: dict[tuple[str, str], dict[str, Any]], scope: Scope) -> dict[str, Any]:
    row = rows[queue.key]
    if scope.all_namespaces:
        return row
    pending = [p for p, mine in zip(row["pending"], queue.pending) if scope.sees(mine.namespace)]
    return {**row, "pending": pending}


def queues(scope: Scope) -> list[dict[str, Any]]:
    _, waits, rows = _current()
    return [_row(q, rows, scope) for q in _visible(waits.model, scope)]


def queue(scope: Scope, system: str, name: str) -> dict[str, Any] | None:
    _, waits, rows = _current()
    for found in _visible(waits.model, scope):
        if found.system == system and found.name == name:
            return _row(found, rows, scope)
    return None
