"""The preemption timeline: what the ledger says, shaped for ``dashboard/_timeline_request.html``.

One card per preemption request, newest first: its state and reason, each plan (gangweb's, and in
observe mode kube-scheduler's beside it) drawn as its victim units, one square per GPU of every
victim pod coloured by that pod's eviction state, and the request's latest history lines. The page
renders the latest cards; the browser re-fetches one card (``request_card``) whenever a pipeline
event names its request, so both paths go through the same template.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, F, Prefetch, Window
from django.db.models.functions import RowNumber

from gangweb.access.scope import Scope
from scheduler.preemption.models import Eviction, LedgerEntry, Plan, PlanSource, PreemptionRequest

LATEST_REQUESTS = 20
HISTORY_LINES = 12

# Eviction states as the picture names them (CSS class st-<state>), in the legend's order.
EVICTION_LEGEND = [
    ("planned", "planned"),
    ("dry_run_ok", "dry run ok"),
    ("evicting", "evicting"),
    ("evicted", "evicted"),
    ("dry_run_refused", "refused"),
    ("failed", "not evicted"),
]


def latest_cards(limit: int = LATEST_REQUESTS, scope: Scope | None = None) -> list[dict[str, Any]]:
    """The newest requests' cards; with ``scope``, only requests of namespaces it sees."""
    queryset = PreemptionRequest.objects.order_by("-created_at", "-id")
    if scope is not None:
        queryset = scope.filter(queryset)
    requests = list(_with_plans(queryset)[:limit])
    history = _latest_history([r.pk for r in requests])
    return [_card(r, *history.get(r.pk, ([], 0))) for r in requests]


def request_card(request_id: int, scope: Scope | None = None) -> dict[str, Any] | None:
    queryset = PreemptionRequest.objects.filter(pk=request_id)
    if scope is not None:
        queryset = scope.filter(queryset)
    request = _with_plans(queryset).first()
    if request is None:
        return None
    return _card(request, *_latest_history([request.pk]).get(request.pk, ([], 0)))


def _with_plans(queryset):
    evictions = Eviction.objects.order_by("victim_unit", "namespace", "name")
    plans = Plan.objects.order_by("created_at", "id").prefetch_related(
        Prefetch("pod_evictions", queryset=evictions)
    )
    return queryset.prefetch_related(Prefetch("plans", queryset=plans))


def _latest_history(request_ids: list[int]) -> dict[int, tuple[list[LedgerEntry], int]]:
    """The last ``HISTORY_LINES`` entries of each request (oldest first) and how many it has in all.

    One query: a big execution writes hundreds of entries per request, and the page needs a few.
    """
    if not request_ids:
        return {}
    rows = (
        LedgerEntry.objects.filter(request_id__in=request_ids)
        .annotate(
            newest_rank=Window(RowNumber(), partition_by=F("request_id"), order_by=F("id").desc()),
            total=Window(Count("id"), partition_by=F("request_id")),
        )
        .filter(newest_rank__lte=HISTORY_LINES)
        .only("id", "kind", "message", "created_at", "request_id")
    )
    found: dict[int, tuple[list[LedgerEntry], int]] = {}
    for entry in sorted(rows, key=lambda e: e.pk):
        lines, _ = found.get(entry.request_id, ([], 0))
        lines.append(entry)
        found[entry.request_id] = (lines, entry.total)
    return found


def _card(request: PreemptionRequest, history: list[LedgerEntry], total: int) -> dict[str, Any]:
    plans = [_plan_view(plan) for plan in request.plans.all()]
    return {
        "id": request.pk,
        "podGroup": request.podgroup,
        "mode": request.mode,
        "policy": request.policy,
        "state": request.state,
        "reason": request.reason,
        "trigger": request.trigger,
        "opened": _clock(request.created_at),
        "openedIso": request.created_at.isoformat(),
        "took": _took(request.created_at, request.finished_at),
        "plans": plans,
        "history": [
            {"id": e.pk, "at": _clock(e.created_at), "kind": e.kind, "message": e.message} for e in history
        ],
        "earlierHistory": max(total - len(history), 0),
    }


def _plan_view(plan: Plan) -> dict[str, Any]:
    units: dict[str, list[dict[str, Any]]] = {}
    for row in plan.pod_evictions.all():
        answer = row.api_message or row.dry_run_message
        code = row.api_code if row.api_code is not None else row.dry_run_code
        detail = f"{row.pod} on {row.node or 'no node'}: {row.state.replace('_', ' ')}"
        if row.state not in ("planned", "dry_run_ok", "evicted") and (code or answer):
            detail += f" ({code}: {answer})" if code else f" ({answer})"
        units.setdefault(row.victim_unit, []).append(
            {
                "pod": row.pod,
                "state": row.state,
                "squares": range(max(row.gpus, 1)),
                "gpus": row.gpus,
                "detail": detail,
            }
        )
    return {
        "id": plan.pk,
        "source": plan.source,
        "observed": plan.source == PlanSource.KUBE_SCHEDULER,
        "feasible": plan.feasible,
        "domain": plan.domain,
        "reason": plan.reason,
        "pods": plan.evicted_pods,
        "gpus": plan.evicted_gpus,
        "unitCount": plan.victim_units,
        "lostGpuHours": round(plan.lost_gpu_seconds / 3600, 1),
        "maxPriority": plan.max_victim_priority,
        "units": [
            {"name": name, "pods": pods, "gpus": sum(p["gpus"] for p in pods)} for name, pods in units.items()
        ],
    }


def _clock(moment: datetime) -> str:
    return moment.strftime("%H:%M:%S")


def _took(start: datetime, end: datetime | None) -> str:
    if end is None:
        return ""
    seconds = max((end - start).total_seconds(), 0)
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m {int(seconds % 60)}s"
