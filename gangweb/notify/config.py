"""Sinks as admin data: the one place they are added, changed, removed and described (the ``notify``
command and ``/api/v1/notify/`` both call these)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count

from gangweb.access.grants import NAMESPACE
from gangweb.notify.models import Attempt, Delivery, Sink, SinkKind
from gangweb.notify.sinks import SinkError, check_url

NAME = NAMESPACE  # a sink is named like a namespace: a DNS label


def _namespaces(names: list[str] | None) -> list[str]:
    names = sorted({n.strip() for n in names or [] if n.strip()})
    bad = [n for n in names if not NAMESPACE.match(n)]
    if bad:
        raise SinkError(f"not a Kubernetes namespace name: {', '.join(bad)}")
    return names


def add_sink(
    name: str,
    *,
    kind: str,
    url: str,
    namespaces: list[str] | None = None,
    all_namespaces: bool = False,
    kinds: list[str] | None = None,
) -> Sink:
    """A new sink; ``SinkError`` says what is wrong and nothing is written."""
    if not NAME.match(name or ""):
        raise SinkError(f"a sink name is a DNS label (lower-case letters, digits, '-'), not {name!r}")
    if kind not in SinkKind.values:
        raise SinkError(f"kind must be one of {', '.join(SinkKind.values)}, not {kind!r}")
    check_url(url)
    routed = _namespaces(namespaces)
    if all_namespaces == bool(routed):
        raise SinkError("a sink's route is either some namespaces or all namespaces (exactly one of the two)")
    kinds = sorted({k.strip() for k in kinds or [] if k.strip()})
    try:
        with transaction.atomic():
            return Sink.objects.create(
                name=name, kind=kind, url=url, namespaces=routed, all_namespaces=all_namespaces, kinds=kinds
            )
    except IntegrityError:
        raise SinkError(f"a sink named {name} exists already") from None


def remove_sink(name: str) -> int:
    """Remove a sink with its deliveries; how many deliveries went with it (``SinkError`` if none)."""
    sink = Sink.objects.filter(name=name).first()
    if sink is None:
        raise SinkError(f"no sink named {name}")
    count = sink.deliveries.count()
    sink.delete()
    return count


def describe_sink(sink: Sink) -> dict[str, Any]:
    counts = {state: 0 for state in ("pending", "delivered", "gave_up")}
    for state, n in _counts(sink):
        counts[state] = n
    return {
        "name": sink.name,
        "kind": sink.kind,
        "url": sink.url,
        "route": {"allNamespaces": sink.all_namespaces, "namespaces": sink.namespaces},
        "kinds": sink.kinds,
        "enabled": sink.enabled,
        "createdAt": sink.created_at.isoformat(),
        "deliveries": counts,
    }


def _counts(sink: Sink):
    return sink.deliveries.values_list("state").annotate(n=Count("id")).values_list("state", "n")


def describe_delivery(delivery: Delivery, attempts: list[Attempt]) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "sink": delivery.sink.name,
        "eventId": str(delivery.event_id),
        "kind": delivery.kind,
        "state": delivery.state,
        "attempts": [
            {
                "at": a.at.isoformat(),
                "seconds": round(a.seconds, 4),
                "status": a.status,
                "ok": a.ok,
                "error": a.error,
            }
            for a in attempts
        ],
        "createdAt": delivery.created_at.isoformat(),
        "nextAttemptAt": delivery.next_attempt_at.isoformat() if delivery.state == "pending" else None,
        "deliveredAt": delivery.delivered_at.isoformat() if delivery.delivered_at else None,
        "lastError": delivery.last_error,
        "payload": delivery.payload,
    }


def deliveries(sink: str | None = None, state: str | None = None):
    rows = Delivery.objects.select_related("sink").prefetch_related("attempt_rows")
    if sink:
        rows = rows.filter(sink__name=sink)
    if state:
        rows = rows.filter(state=state)
    return rows.order_by("-id")
