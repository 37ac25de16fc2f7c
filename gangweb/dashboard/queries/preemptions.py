"""The ledger grouped by gang: one card per gang, its retries folded into runs.

A run is consecutive requests of one gang that ended the same way for the same reason ("infeasible x
7 since 08:13, next try 08:29"); an executed preemption is never folded. Cards with an execution come
first, then the most recent.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from gangweb.access.scope import Scope
from scheduler.preemption.models import Plan, PlanSource, PreemptionRequest, RequestState
from scheduler.words import plural

EXECUTED = {RequestState.SUCCEEDED, RequestState.EXECUTING}
MAX_REQUESTS = 2000


def _plan_summary(plan: Plan | None) -> dict[str, Any] | None:
    if plan is None:
        return None
    return {
        "policy": plan.policy,
        "feasible": plan.feasible,
        "domain": plan.domain,
        "pods": plan.evicted_pods,
        "gpus": plan.evicted_gpus,
        "units": plan.victim_units,
        "lostGpuHours": round(plan.lost_gpu_seconds / 3600, 1),
        "summary": (
            f"evicted {plural(plan.evicted_pods, 'pod')} in {plural(plan.victim_units, 'unit')}, "
            f"{plural(plan.evicted_gpus, 'GPU')}"
        ),
        "victims": [f"{v.get('namespace')}/{v.get('name')}" for v in (plan.victims or [])],
    }


def cards(scope: Scope, params: dict[str, str]) -> dict[str, Any]:
    queryset = scope.filter(PreemptionRequest.objects.all())
    if params.get("namespace"):
        queryset = queryset.filter(namespace=params["namespace"])
    if params.get("gang"):
        queryset = queryset.filter(name__icontains=params["gang"])
    if params.get("state"):
        queryset = queryset.filter(state=params["state"])
    requests = list(queryset.order_by("-created_at", "-id")[:MAX_REQUESTS])
    plans: dict[int, Plan] = {}
    for plan in Plan.objects.filter(request__in=[r.pk for r in requests], source=PlanSource.ENGINE).order_by(
        "id"
    ):
        plans[plan.request_id] = plan
    cooldown = timedelta(seconds=settings.GANGWEB_REQUEST_COOLDOWN_SECONDS)
    by_gang: dict[str, list[PreemptionRequest]] = {}
    for request in requests:
        by_gang.setdefault(f"{request.namespace}/{request.name}", []).append(request)
    out = []
    for key, rows in by_gang.items():
        rows.sort(key=lambda r: (r.created_at, r.pk))
        runs: list[dict[str, Any]] = []
        for r in rows:
            last = runs[-1] if runs else None
            plan = plans.get(r.pk)
            # Retries that ended alike fold: same state and the same engine outcome (the reason's
            # figures drift from one try to the next), or the same reason without a plan.
            why = (plan.outcome if plan is not None and plan.outcome else "") or r.reason
            executed = r.state in EXECUTED
            if (
                last
                and not last["executed"]
                and not executed
                and (last["state"], last["why"]) == (r.state, why)
            ):
                last["count"] += 1
                last["until"] = r.created_at.isoformat()
                last["lastRequest"] = r.pk
                last["reason"] = r.reason
                continue
            runs.append(
                {
                    "state": r.state,
                    "reason": r.reason,
                    "why": why,
                    "count": 1,
                    "since": r.created_at.isoformat(),
                    "until": r.created_at.isoformat(),
                    "firstRequest": r.pk,
                    "lastRequest": r.pk,
                    "executed": executed,
                    "mode": r.mode,
                    "plan": _plan_summary(plan),
                }
            )
        newest = rows[-1]
        done = newest.finished_at or newest.updated_at
        namespace, _, name = key.partition("/")
        out.append(
            {
                "namespace": namespace,
                "name": name,
                "key": key,
                "requests": len(rows),
                "executed": sum(1 for r in rows if r.state in EXECUTED),
                "state": newest.state,
                "latestAt": newest.created_at.isoformat(),
                "nextRetry": (done + cooldown).isoformat()
                if newest.state in (RequestState.INFEASIBLE, RequestState.FAILED)
                else None,
                "runs": runs[::-1],
            }
        )
    out.sort(key=lambda c: c["latestAt"], reverse=True)
    out.sort(key=lambda c: c["executed"] == 0)
    return {"count": len(out), "results": out, "lostGpuHours": lost_over_time(scope)}


def lost_over_time(scope: Scope, days: int = 2) -> dict[str, list]:
    since = timezone.now() - timedelta(days=days)
    done = scope.filter(
        PreemptionRequest.objects.filter(state=RequestState.SUCCEEDED, finished_at__gte=since)
    )
    rows = (
        Plan.objects.filter(source=PlanSource.ENGINE, feasible=True, request__in=done.values("pk"))
        .annotate(hour=TruncHour("request__finished_at"))
        .values("hour")
        .annotate(seconds=Sum("lost_gpu_seconds"))
        .order_by("hour")
    )
    return {
        "t": [round(r["hour"].timestamp()) for r in rows],
        "lostGpuHours": [round(r["seconds"] / 3600, 2) for r in rows],
    }
