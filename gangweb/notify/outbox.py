"""The outbox: each ledger event becomes one ``Delivery`` per sink whose route wants it, written in the
ledger row's own transaction, and is handed to the delivery task once that transaction commits.

``enqueue`` is connected beside the live events' publisher (``gangweb/apps.py``), so it runs wherever the
ledger publishes (``scheduler/preemption/events.py``), inside the ledger's ``transaction.atomic`` block:
a rolled-back ledger write leaves no delivery, a committed one always has its deliveries, and a task lost
on the way (Redis down, a worker killed) is found again by ``notify.sweep``.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from gangweb.access.scope import VIEWER, Scope
from gangweb.clusterview.redact import redact
from gangweb.notify.models import Delivery, Sink

logger = logging.getLogger(__name__)


def namespaces_of(payload: dict[str, Any]) -> set[str]:
    """The namespaces a ledger event names: its gang's, its pods', its victims'."""
    found: set[str] = set()
    for key in ("podGroup", "pod"):
        value = payload.get(key)
        if isinstance(value, str) and "/" in value:
            found.add(value.partition("/")[0])
    for unit in [payload.get("victimUnit"), *(payload.get("units") or [])]:
        if isinstance(unit, str) and "/" in unit:
            found.add(unit.partition(" ")[2].partition("/")[0])
    for victim in payload.get("victims") or []:
        if isinstance(victim, dict) and victim.get("namespace"):
            found.add(victim["namespace"])
    for pod in payload.get("evictions") or payload.get("pods") or []:
        if isinstance(pod, str) and "/" in pod:
            found.add(pod.partition("/")[0])
    found.discard("")
    return found


def route_scope(sink: Sink) -> Scope:
    """What a sink's route may read: a viewer of its namespaces (or of all of them)."""
    if sink.all_namespaces:
        return Scope(user=f"sink {sink.name}", everywhere=VIEWER)
    return Scope(user=f"sink {sink.name}", per_namespace={ns: VIEWER for ns in sink.namespaces})


def cut(sink: Sink, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The payload as ``sink`` receives it, or None when its route does not want the event. A tenant route
    gets events that name one of its namespaces, with every other namespace's names taken out."""
    if sink.kinds and kind not in sink.kinds:
        return None
    if sink.all_namespaces:
        return payload
    if not namespaces_of(payload) & set(sink.namespaces):
        return None
    return redact(payload, route_scope(sink))


def enqueue(kind: str, payload: dict[str, Any]) -> None:
    """Write the deliveries of one ledger event (in the caller's transaction); send them after commit."""
    sinks = list(Sink.objects.filter(enabled=True))
    if not sinks:
        return
    event_id, now = uuid.uuid4(), timezone.now()
    rows = []
    for sink in sinks:
        body = cut(sink, kind, payload)
        if body is not None:
            rows.append(Delivery(sink=sink, event_id=event_id, kind=kind, payload=body, next_attempt_at=now))
    if not rows:
        return
    Delivery.objects.bulk_create(rows)
    ids = [row.pk for row in rows]
    transaction.on_commit(lambda: _hand_over(ids))


def _hand_over(ids: list[int]) -> None:
    from gangweb.notify.tasks import deliver

    try:
        deliver.delay(ids)
    except Exception as exc:  # the broker is down: the rows are committed, notify.sweep sends them
        logger.warning("notifications %s wait for the sweep: %s", ids, exc)
