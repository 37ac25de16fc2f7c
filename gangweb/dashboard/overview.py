"""Headline figures of the overview: preemptions and GPU-hours lost in the last hour and day."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from gangweb.access.scope import Scope
from scheduler.preemption.models import (
    AWAITING_APPROVAL_STATES,
    Mode,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)


def preemption_figures(scope: Scope) -> dict[str, Any]:
    now = timezone.now()
    executed = scope.filter(PreemptionRequest.objects.filter(state=RequestState.SUCCEEDED))
    out: dict[str, Any] = {}
    for label, span in (("hour", timedelta(hours=1)), ("day", timedelta(days=1))):
        done = executed.filter(finished_at__gte=now - span)
        lost = Plan.objects.filter(
            source=PlanSource.ENGINE, feasible=True, request__in=done.values("pk")
        ).aggregate(seconds=Sum("lost_gpu_seconds"))
        out[label] = {
            "preemptions": done.count(),
            "lostGpuHours": round((lost["seconds"] or 0) / 3600, 1),
        }
    return out


def waiting_approvals(scope: Scope) -> list[dict[str, Any]]:
    """Plans waiting for a person (approve mode), for every page's header; none for a signed-out reader
    (the public demo's), who cannot act on them."""
    if not scope.signed_in:
        return []
    rows = scope.filter(
        PreemptionRequest.objects.filter(mode=Mode.APPROVE, state__in=AWAITING_APPROVAL_STATES).order_by(
            "created_at"
        )
    )[:20]
    return [{"id": r.pk, "namespace": r.namespace, "name": r.name, "state": r.state} for r in rows]


def request_counts(scope: Scope) -> dict[str, int]:
    rows = scope.filter(PreemptionRequest.objects.all()).aggregate(
        total=Count("id"), executed=Count("id", filter=Q(state=RequestState.SUCCEEDED))
    )
    return {k: v or 0 for k, v in rows.items()}
