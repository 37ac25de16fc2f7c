"""The preemption ledger cut to a reader's scope: requests, plans, evictions, history, verdicts.

A request, its plans and its history belong to the namespace of the gang that asked; an eviction row
to the namespace of the pod it evicted (team A sees the pods it lost, whoever took them). Names of
other namespaces inside a visible row are hidden by ``gangweb.clusterview.redact`` on the way out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, Prefetch, Q, QuerySet, Subquery
from rest_framework.exceptions import ValidationError

from gangweb.access.scope import Scope
from gangweb.api.v1 import filters
from scheduler.engine.gangkey import GangKey
from scheduler.engine.outcomes import INFEASIBLE, Outcome
from scheduler.preemption.ledger.requests import next_request_at, recent_requests
from scheduler.preemption.models import (
    Eviction,
    LedgerEntry,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)

# Ledger kinds written by the pipeline (``kind`` filter); kinds found in the table count too, so a new
# kind is never refused once written.
KNOWN_KINDS = frozenset(
    {
        "budget.spent",
        "eviction.dry_run",
        "eviction.result",
        "eviction.retry",
        "execution.evicting",
        "execution.recheck",
        "execution.waiting",
        "notice.ended",
        "notice.given",
        "notice.withdrawn",
        "observed.preemption",
        "plan.created",
        "plan.fan_out",
        "podgroup.created",
        "request.opened",
        "request.planning",
        "request.requeued",
        "request.executing",
        "unit.partial",
        # approve mode's decisions (scheduler/preemption/ledger/approvals.py)
        "request.approved",
        "request.approval_refused",
        "request.cancelled",
        "request.finished",
        # gang health (scheduler/preemption/ledger/health.py, docs/idle.md)
        "gang.broken",
        "gang.recovered",
        *(f"request.{state}" for state in RequestState.values),
    }
)

REQUEST_PARAMS = ("namespace", "podgroup", "state", "mode")
PLAN_PARAMS = ("request", "outcome", "namespace")
EVICTION_PARAMS = ("state", "pod", "unit", "node", "plan", "request", "namespace")
LEDGER_PARAMS = ("since", "request", "kind", "podgroup", "namespace")


# An eviction row shows its plan's request id and nothing else of the plan: the plan's JSON columns (the
# whole victim list, 64 pods in the benchmark) stay in the database. Loading them for every row of a
# page of /evictions/ cost more than the rows (bench api, docs/api.md).
_PLAN_BESIDE_EVICTION = [
    f"plan__{f.name}" for f in Plan._meta.concrete_fields if f.name not in ("id", "request")
]


def _evictions() -> QuerySet:
    return Eviction.objects.select_related("plan").defer(*_PLAN_BESIDE_EVICTION)


def requests(scope: Scope, params=None, *, detail: bool = False) -> QuerySet:
    queryset = scope.filter(PreemptionRequest.objects.order_by("-created_at", "-id"))
    if not detail:  # each row's notice, read beside it (the detail has its plans)
        noticed = Plan.objects.filter(
            request=OuterRef("pk"), source=PlanSource.ENGINE, notice_given_at__isnull=False
        ).order_by("-created_at", "-id")
        queryset = queryset.annotate(
            noticed_plan=Subquery(noticed.values("pk")[:1]),
            notice_given_at=Subquery(noticed.values("notice_given_at")[:1]),
            notice_deadline=Subquery(noticed.values("notice_deadline")[:1]),
            notice_withdrawn_at=Subquery(noticed.values("notice_withdrawn_at")[:1]),
        )
    if detail:
        # prefetch_related hands each eviction its plan (no select_related: that read the plan again
        # for each of its evictions)
        evictions = Eviction.objects.order_by("victim_unit", "namespace", "name")
        plans = (
            Plan.objects.select_related("request")
            .order_by("created_at", "id")
            .prefetch_related(Prefetch("pod_evictions", queryset=evictions))
        )
        queryset = queryset.prefetch_related(Prefetch("plans", queryset=plans))
    return filters.filter_requests(queryset, params) if params is not None else queryset


def plans(scope: Scope, params=None, *, detail: bool = False) -> QuerySet:
    queryset = scope.filter(
        Plan.objects.select_related("request").order_by("-created_at", "-id"), "request__namespace"
    )
    if detail:
        queryset = queryset.prefetch_related("pod_evictions")
    if params is None:
        return queryset
    queryset = filters.filter_plans(queryset, params)
    if namespaces := filters.values_of(params, "namespace"):
        queryset = queryset.filter(request__namespace__in=namespaces)
    if outcomes := filters.values_of(params, "outcome"):
        match = Q()
        for outcome in outcomes:
            # "infeasible" matches every infeasible:<why>; the machine codes of docs/engine.md
            code = outcome in (Outcome.FITS, Outcome.PREEMPT, Outcome.REAP) or outcome.startswith(
                f"{INFEASIBLE}:"
            )
            if not code and outcome != INFEASIBLE:
                raise ValidationError(
                    {"outcome": [f"unknown outcome {outcome!r}; fits, preempt, reap, infeasible[:<why>]"]}
                )
            match |= Q(outcome__startswith=outcome) if outcome == INFEASIBLE else Q(outcome=outcome)
        queryset = queryset.filter(match)
    return queryset


def evictions(scope: Scope, params=None) -> QuerySet:
    queryset = scope.filter(_evictions().order_by("-id"))
    if params is None:
        return queryset
    queryset = filters.filter_evictions(queryset, params)
    if namespaces := filters.values_of(params, "namespace"):
        queryset = queryset.filter(namespace__in=namespaces)
    return queryset


def known_kinds() -> frozenset[str]:
    return KNOWN_KINDS | set(LedgerEntry.objects.order_by().values_list("kind", flat=True).distinct())


def ledger(scope: Scope, params=None) -> QuerySet:
    queryset = LedgerEntry.objects.order_by("-id")
    if not scope.all_namespaces:  # entries about no gang are the cluster's: all-namespace readers only
        queryset = scope.filter(queryset).exclude(namespace="")
    if params is None:
        return queryset
    # A kind the pipeline writes is known without a look at the table (a DISTINCT over the whole
    # ledger, most of the answer's time: docs/measurements.md); any other kind must have been written.
    unknown = [k for k in filters.values_of(params, "kind") if k not in KNOWN_KINDS]
    if unknown:
        written = set(
            LedgerEntry.objects.filter(kind__in=unknown).order_by().values_list("kind", flat=True).distinct()
        )
        if missing := [k for k in unknown if k not in written]:
            known = known_kinds()
            raise ValidationError(
                {"kind": [f"unknown kind {missing[0]!r}; known: {', '.join(sorted(known))}"]}
            )
    if namespaces := filters.values_of(params, "namespace"):
        queryset = queryset.filter(namespace__in=namespaces)
    return filters.filter_ledger(queryset, params)


# --- a gang's verdict: what gangweb last did for it, and when it tries again ----------------------


def verdicts(gang_keys: Iterable[GangKey]) -> dict[GangKey, dict[str, Any]]:
    """Gang key -> verdict for the given gangs, in two queries however many they are."""
    rows = recent_requests(gang_keys, "mode", "reason", "updated_at")
    latest_ids = [found[0].pk for found in rows.values()]
    outcomes: dict[int, str] = {}
    notices: dict[int, dict[str, Any] | None] = {}
    for request_id, plan_id, outcome, given, deadline, withdrawn in (
        Plan.objects.filter(request_id__in=latest_ids)
        .order_by("created_at", "id")
        .values_list(
            "request_id", "id", "outcome", "notice_given_at", "notice_deadline", "notice_withdrawn_at"
        )
    ):
        outcomes[request_id] = outcome
        notices[request_id] = (
            {"plan": plan_id, "givenAt": given, "deadline": deadline, "withdrawnAt": withdrawn}
            if given
            else None
        )
    pause = settings.GANGWEB_REQUEST_COOLDOWN_SECONDS
    out: dict[GangKey, dict[str, Any]] = {}
    for gang_key, found in rows.items():
        last = found[0]
        again = next_request_at(found, pause_seconds=pause)
        out[GangKey(gang_key)] = {
            "request": last.pk,
            "state": last.state,
            "mode": last.mode,
            "outcome": outcomes.get(last.pk) or None,
            "reason": last.reason,
            "at": last.updated_at,
            "retryAt": again,
            "notice": notices.get(last.pk),
        }
    return out


def history_of(namespace: str, name: str, member_pods: Iterable[str] = ()) -> dict[str, Any]:
    """A gang's preemption history: the requests it opened (as preemptor) and the evictions of its pods
    (as victim: its whole unit under ``disruptionMode: all``, else its current members by name), newest
    first, at most 50 each."""
    as_preemptor = list(
        PreemptionRequest.objects.filter(namespace=namespace, name=name).order_by("-created_at", "-id")[:50]
    )
    unit = f"PodGroup {namespace}/{name}"
    victim_rows = (
        Eviction.objects.filter(namespace=namespace)
        .filter(Q(victim_unit=unit) | Q(name__in=list(member_pods)))
        .select_related("plan__request")
        .order_by("-id")[:50]
    )
    return {"asPreemptor": as_preemptor, "asVictim": list(victim_rows)}
