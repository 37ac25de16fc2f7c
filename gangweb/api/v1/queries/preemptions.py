"""The ledger grouped by gang: one card per gang, its retries folded into runs (``GET
/api/v1/preemptions/``, the /preemptions/ page), and the GPU-hours lost per hour
(``GET /api/v1/preemptions/lost-gpu-hours/``).

A run is consecutive requests of one gang that ended the same way for the same reason ("infeasible x
7 since 08:13, next try 08:29"); an executed preemption is never folded. Cards with an execution come
first, then the most recent. A retried card's ``retryAt`` is the gang's verdict's (``/api/v1/podgroups/``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db.models import Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from gangweb.access.scope import Scope
from gangweb.api.v1.queries.ledger import verdicts
from scheduler.engine.gangkey import GangKey, gang_key_of
from scheduler.preemption.models import Eviction, Plan, PlanSource, PreemptionRequest, RequestState
from scheduler.words import plural

EXECUTED = {RequestState.SUCCEEDED, RequestState.EXECUTING}
RETRIED = (RequestState.INFEASIBLE, RequestState.FAILED)  # a new request comes after these
MAX_REQUESTS = 2000


def _plan_summary(plan: Plan | None, realised: dict[int, float | None]) -> dict[str, Any] | None:
    if plan is None:
        return None
    lost = realised.get(plan.pk)
    return {
        "policy": plan.policy,
        "feasible": plan.feasible,
        "domain": plan.domain,
        "evictedPods": plan.evicted_pods,
        "evictedGpus": plan.evicted_gpus,
        "victimUnits": plan.victim_units,
        "lostGpuHours": round(plan.lost_gpu_seconds / 3600, 1),
        "optimality": plan.optimality,
        # Estimated at planning (GPUs x time since each victim's last checkpoint) against what its evictions
        # really lost (docs/design.md "Lost work"); null until an eviction knows.
        "estimatedLostGpuHours": round(plan.lost_gpu_seconds / 3600, 2),
        "realisedLostGpuHours": round(lost / 3600, 2) if lost is not None else None,
        "noticeDeadline": plan.notice_deadline.isoformat() if plan.notice_deadline else None,
        "noticeWithdrawn": plan.notice_withdrawn_at is not None,
        "summary": (
            f"evicted {plural(plan.evicted_pods, 'pod')} in {plural(plan.victim_units, 'unit')}, "
            f"{plural(plan.evicted_gpus, 'GPU')}"
        ),
        "victims": [f"{v.get('namespace')}/{v.get('name')}" for v in (plan.victims or [])],
    }


def cards(
    scope: Scope, *, namespaces: Iterable[str] = (), gang: str = "", states: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """One card per gang of the newest ``MAX_REQUESTS`` requests the reader sees (of these namespaces,
    a name containing ``gang`` in any case, a request in one of these states), executions first."""
    queryset = scope.filter(PreemptionRequest.objects.all())
    if namespaces := list(namespaces):
        queryset = queryset.filter(namespace__in=namespaces)
    if gang:
        queryset = queryset.filter(name__icontains=gang)
    if states := list(states):
        queryset = queryset.filter(state__in=states)
    requests = list(queryset.order_by("-created_at", "-id")[:MAX_REQUESTS])
    plans: dict[int, Plan] = {}
    for plan in Plan.objects.filter(request__in=[r.pk for r in requests], source=PlanSource.ENGINE).order_by(
        "id"
    ):
        plans[plan.request_id] = plan
    realised = dict(
        Eviction.objects.filter(plan_id__in=[p.pk for p in plans.values()], lost_gpu_seconds__isnull=False)
        .values("plan_id")
        .annotate(seconds=Sum("lost_gpu_seconds"))
        .values_list("plan_id", "seconds")
    )
    by_gang: dict[GangKey, list[PreemptionRequest]] = {}
    for request in requests:
        by_gang.setdefault(gang_key_of(request.namespace, request.name), []).append(request)
    # a gang whose newest request failed or was infeasible is retried: when, its verdict says (as /gangs/
    # shows it); only those gangs' verdicts are read
    verdict = verdicts(gang_key for gang_key, rows in by_gang.items() if rows[0].state in RETRIED)
    out = []
    for gang_key, rows in by_gang.items():
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
                    "plan": _plan_summary(plan, realised),
                }
            )
        newest = rows[-1]
        again = (verdict.get(gang_key) or {}).get("retryAt")
        out.append(
            {
                "namespace": newest.namespace,
                "name": newest.name,
                "podGroup": gang_key,
                "requests": len(rows),
                "executed": sum(1 for r in rows if r.state in EXECUTED),
                "state": newest.state,
                "latestAt": newest.created_at.isoformat(),
                "retryAt": again.isoformat() if again is not None else None,
                "runs": runs[::-1],
            }
        )
    out.sort(key=lambda c: c["latestAt"], reverse=True)
    out.sort(key=lambda c: c["executed"] == 0)
    return out


def lost_over_time(scope: Scope, days: int = 2) -> list[dict[str, Any]]:
    """GPU-hours lost per hour to the preemptions the reader sees executed (the preemptor's namespace)
    in the last ``days``, oldest first: ``[{"at", "lostGpuHours"}]``, hours without one left out."""
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
    return [{"at": r["hour"].isoformat(), "lostGpuHours": round(r["seconds"] / 3600, 2)} for r in rows]
