"""Every state change of the preemption ledger, in one place.

Each function runs in its own transaction, locks the row it changes (``select_for_update``), checks
that the transition is legal, appends a history entry, and publishes the matching live event once the
transaction commits. Callers (tasks, execution, observe) never write the models directly, so the
ledger and the events cannot drift apart.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from scheduler.preemption import metrics
from scheduler.preemption.events import publish
from scheduler.preemption.models import (
    ACTIVE_REQUEST_STATES,
    Eviction,
    EvictionState,
    LedgerEntry,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)

logger = logging.getLogger(__name__)

TERMINAL_REQUEST_STATES = frozenset(
    {
        RequestState.SUCCEEDED,
        RequestState.FAILED,
        RequestState.INFEASIBLE,
        RequestState.SUPERSEDED,
        RequestState.OBSERVED,
    }
)


@dataclass(frozen=True)
class PodFacts:
    """What the ledger keeps about a victim pod when the plan is made."""

    uid: str = ""
    node: str = ""
    gpus: int = 0


def note(
    kind: str,
    message: str,
    *,
    request: PreemptionRequest | None = None,
    plan: Plan | None = None,
    data: dict[str, Any] | None = None,
) -> LedgerEntry:
    """Append one history entry (inside the caller's transaction when there is one)."""
    target = request or (plan.request if plan else None)
    return LedgerEntry.objects.create(
        kind=kind,
        request=target,
        plan=plan,
        namespace=target.namespace if target else "",
        name=target.name if target else "",
        message=message,
        data=data or {},
    )


def _request_payload(request: PreemptionRequest) -> dict[str, Any]:
    return {
        "request": request.pk,
        "podGroup": request.podgroup,
        "mode": request.mode,
        "state": request.state,
        "reason": request.reason,
    }


def _lock_request(request_id: int) -> PreemptionRequest:
    return PreemptionRequest.objects.select_for_update().get(pk=request_id)


def _move(request: PreemptionRequest, new_state: str, reason: str | None = None) -> None:
    request.check_transition(new_state)
    request.state = new_state
    if reason is not None:
        request.reason = reason
    now = timezone.now()
    if new_state == RequestState.PLANNED:
        request.planned_at = now
    elif new_state == RequestState.EXECUTING:
        request.execution_started_at = now
    elif new_state in TERMINAL_REQUEST_STATES:
        request.finished_at = now
    request.save()


# --- requests -----------------------------------------------------------------------------------


def open_request(
    namespace: str, name: str, *, mode: str, policy: str = "gangweb", trigger: str = ""
) -> tuple[PreemptionRequest, bool]:
    """The gang's active request, creating it when there is none (idempotent; safe under races)."""
    existing = PreemptionRequest.objects.filter(
        namespace=namespace, name=name, state__in=ACTIVE_REQUEST_STATES
    ).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            request = PreemptionRequest.objects.create(
                namespace=namespace, name=name, mode=mode, policy=policy, trigger=trigger
            )
            note("request.opened", f"{request.podgroup} is unschedulable: {trigger}", request=request)
            publish("request.opened", _request_payload(request))
            return request, True
    except IntegrityError:
        # Another worker opened it between our read and our insert: the partial unique index wins.
        return PreemptionRequest.objects.get(namespace=namespace, name=name, state__in=ACTIVE_REQUEST_STATES), False


def begin_planning(request_id: int) -> PreemptionRequest | None:
    """pending -> planning; None when the request is no longer waiting for a plan."""
    with transaction.atomic():
        request = _lock_request(request_id)
        if request.state != RequestState.PENDING:
            return None
        _move(request, RequestState.PLANNING)
        note("request.planning", f"planning {request.podgroup} with policy {request.policy}", request=request)
        return request


def requeue_planning(request_id: int, why: str) -> None:
    """planning -> pending, for a planning task that died or must run again."""
    with transaction.atomic():
        request = _lock_request(request_id)
        if request.state != RequestState.PLANNING:
            return
        _move(request, RequestState.PENDING)
        note("request.requeued", why, request=request)


def record_plan(
    request_id: int,
    plan: dict[str, Any],
    *,
    cost: dict[str, Any],
    pods: dict[str, PodFacts],
    planning_seconds: float = 0.0,
    planned_by: str = "single",
    source: str = PlanSource.ENGINE,
) -> Plan:
    """Store an engine plan (``gang plan`` JSON) and its evictions; planning -> planned | infeasible."""
    with transaction.atomic():
        request = _lock_request(request_id)
        stored = Plan.objects.create(
            request=request,
            source=source,
            policy=plan.get("policy", request.policy),
            feasible=bool(plan.get("feasible")),
            victims=plan.get("victims") or [],
            evictions=plan.get("evictions") or [],
            placement=plan.get("placement") or {},
            domain=plan.get("domain"),
            reason=plan.get("reason") or "",
            pdb_violations=cost.get("pdb_violations", 0),
            max_victim_priority=cost.get("max_victim_priority"),
            victim_priority_sum=cost.get("victim_priority_sum", 0),
            victim_units=cost.get("victim_units", len(plan.get("victims") or [])),
            evicted_pods=len(plan.get("evictions") or []),
            evicted_gpus=sum(pods.get(p, PodFacts()).gpus for p in plan.get("evictions") or []),
            lost_gpu_seconds=cost.get("lost_gpu_seconds", 0.0),
            planning_seconds=planning_seconds,
            planned_by=planned_by,
        )
        for victim in stored.victims:
            unit = f"{victim.get('kind', 'Pod')} {victim.get('namespace')}/{victim.get('name')}"
            for pod_key in victim.get("pods") or []:
                namespace, _, name = pod_key.partition("/")
                facts = pods.get(pod_key, PodFacts())
                Eviction.objects.create(
                    plan=stored,
                    namespace=namespace,
                    name=name,
                    pod_uid=facts.uid,
                    node=facts.node,
                    gpus=facts.gpus,
                    victim_unit=unit,
                )
        if source == PlanSource.ENGINE:
            if request.state == RequestState.PLANNING:
                _move(request, RequestState.PLANNED if stored.feasible else RequestState.INFEASIBLE, stored.reason)
            note(
                "plan.created",
                f"plan {stored.pk}: {len(stored.evictions)} pods in {stored.victim_units} units; {stored.reason}",
                request=request,
                plan=stored,
                data={"plan": stored.as_gang_plan(), "plannedBy": planned_by},
            )
        payload = {**_request_payload(request), "plan": stored.pk, "source": source, **stored.as_gang_plan()}
        publish("plan.created", payload)
        transaction.on_commit(lambda: metrics.observe_plan(stored, planning_seconds))
        if request.state == RequestState.INFEASIBLE:
            _finish_side_effects(request)
        return stored


def begin_execution(request_id: int) -> PreemptionRequest | None:
    """planned -> executing; returns the request when it is (now or already) executing."""
    with transaction.atomic():
        request = _lock_request(request_id)
        if request.state == RequestState.EXECUTING:
            return request
        if request.state != RequestState.PLANNED:
            return None
        _move(request, RequestState.EXECUTING)
        note("request.executing", f"executing the plan for {request.podgroup}", request=request)
        return request


def finish(request_id: int, state: str, reason: str, data: dict[str, Any] | None = None) -> PreemptionRequest:
    """Move a request to a terminal state (no-op if it already is terminal)."""
    with transaction.atomic():
        request = _lock_request(request_id)
        if request.state in TERMINAL_REQUEST_STATES:
            return request
        _move(request, state, reason)
        note(f"request.{state}", reason, request=request, data=data)
        if state in (RequestState.FAILED, RequestState.SUPERSEDED):
            # Rows that never reached the API must not look as if they still might.
            for plan_id in request.plans.filter(source=PlanSource.ENGINE).values_list("pk", flat=True):
                fail_unstarted_evictions(plan_id, f"not evicted: request {state}: {reason}")
        _finish_side_effects(request)
        return request


def _finish_side_effects(request: PreemptionRequest) -> None:
    payload = _request_payload(request)
    if request.state == RequestState.SUCCEEDED:
        publish("gang.placed", payload)
    elif request.state in (RequestState.FAILED, RequestState.INFEASIBLE):
        publish("request.failed", payload)
    else:
        publish("request.finished", payload)
    if request.mode == "enforce":
        result = str(request.state)
        transaction.on_commit(lambda: metrics.ATTEMPTS.labels(result=result).inc())


# --- evictions ----------------------------------------------------------------------------------


def _lock_eviction(eviction_id: int) -> Eviction:
    # of=("self",): lock the eviction row only; locking the joined plan and request rows too would
    # serialise every parallel eviction of a plan on its request row.
    return Eviction.objects.select_for_update(of=("self",)).select_related("plan__request").get(pk=eviction_id)


def _eviction_payload(eviction: Eviction) -> dict[str, Any]:
    request = eviction.plan.request
    return {
        "request": request.pk,
        "podGroup": request.podgroup,
        "plan": eviction.plan_id,
        "pod": eviction.pod,
        "node": eviction.node,
        "victimUnit": eviction.victim_unit,
        "state": eviction.state,
        "attempts": eviction.attempts,
        "code": eviction.api_code if eviction.api_code is not None else eviction.dry_run_code,
        "message": eviction.api_message or eviction.dry_run_message,
    }


def record_dry_run(eviction_id: int, code: int, message: str, ok: bool) -> Eviction:
    with transaction.atomic():
        eviction = _lock_eviction(eviction_id)
        if eviction.state not in (EvictionState.PLANNED, EvictionState.DRY_RUN_OK):
            return eviction
        new_state = EvictionState.DRY_RUN_OK if ok else EvictionState.DRY_RUN_REFUSED
        eviction.check_transition(new_state)
        eviction.state = new_state
        eviction.dry_run_code, eviction.dry_run_message = code, message
        eviction.dry_run_at = timezone.now()
        eviction.save()
        verdict = "would be evicted" if ok else f"refused ({code}): {message}"
        note("eviction.dry_run", f"dry run {eviction.pod}: {verdict}", plan=eviction.plan,
             data={"pod": eviction.pod, "code": code, "message": message})
        publish("eviction", _eviction_payload(eviction))
        return eviction


def claim_for_eviction(eviction_id: int) -> Eviction | None:
    """dry_run_ok|evicting -> evicting with one more attempt, committed BEFORE the API call.

    Returns None when the row is past that point (evicted or failed): the caller must not call the API.
    """
    with transaction.atomic():
        eviction = _lock_eviction(eviction_id)
        if eviction.state not in (EvictionState.DRY_RUN_OK, EvictionState.EVICTING):
            return None
        eviction.check_transition(EvictionState.EVICTING)
        eviction.state = EvictionState.EVICTING
        eviction.attempts += 1
        eviction.requested_at = timezone.now()
        eviction.save()
        return eviction


def record_eviction(eviction_id: int, *, evicted: bool, code: int | None, message: str, how: str = "") -> Eviction:
    """evicting -> evicted | failed with the API's answer (or the observation that replaced it)."""
    with transaction.atomic():
        eviction = _lock_eviction(eviction_id)
        if eviction.state in (EvictionState.EVICTED, EvictionState.FAILED):
            return eviction
        new_state = EvictionState.EVICTED if evicted else EvictionState.FAILED
        eviction.check_transition(new_state)
        eviction.state = new_state
        eviction.api_code, eviction.api_message = code, message
        eviction.finished_at = timezone.now()
        eviction.save()
        verdict = "evicted" if evicted else "NOT evicted"
        text = f"{eviction.pod} {verdict} after {eviction.attempts} attempt(s)" + (f" ({how})" if how else "")
        note("eviction.result", f"{text}: {code} {message}".strip(), plan=eviction.plan,
             data={"pod": eviction.pod, "code": code, "message": message, "attempts": eviction.attempts,
                   "how": how, "unit": eviction.victim_unit})
        publish("eviction", _eviction_payload(eviction))
        if evicted:
            gpus = eviction.gpus
            transaction.on_commit(lambda: metrics.EVICTED_GPUS.inc(gpus))
        return eviction


def record_attempt_error(eviction_id: int, code: int | None, message: str) -> None:
    """A retryable answer while finishing a unit: keep the row ``evicting``, remember the answer."""
    with transaction.atomic():
        eviction = _lock_eviction(eviction_id)
        if eviction.state != EvictionState.EVICTING:
            return
        eviction.api_code, eviction.api_message = code, message
        eviction.save(update_fields=["api_code", "api_message"])
        note("eviction.retry", f"{eviction.pod}: attempt {eviction.attempts} answered {code} {message}; retrying",
             plan=eviction.plan, data={"pod": eviction.pod, "code": code, "attempts": eviction.attempts})


def note_budget_spent(eviction_id: int, answer: str) -> None:
    """A real eviction was refused by a disruption budget that the plan's check found open: someone else
    spent it since. The pod is deleted next (UID precondition) so that its unit is not left half-evicted."""
    eviction = Eviction.objects.select_related("plan__request").get(pk=eviction_id)
    note("budget.spent", f"{eviction.pod}: eviction refused ({answer}); the disruption budget was spent by "
         f"someone else after the plan's budget check, so the pod is deleted with a UID precondition to finish "
         f"{eviction.victim_unit}", plan=eviction.plan,
         data={"pod": eviction.pod, "unit": eviction.victim_unit, "answer": answer})


def fail_unstarted_evictions(plan_id: int, why: str) -> int:
    """Mark every eviction of the plan that never reached the API as failed (nothing was evicted)."""
    with transaction.atomic():
        rows = list(
            Eviction.objects.select_for_update()
            .filter(plan_id=plan_id, state__in=(EvictionState.PLANNED, EvictionState.DRY_RUN_OK))
        )
        for eviction in rows:
            eviction.state = EvictionState.FAILED
            eviction.api_message = why
            eviction.finished_at = timezone.now()
            eviction.save()
        return len(rows)


# --- observe mode -------------------------------------------------------------------------------


def record_observed_victims(request_id: int, units: dict[str, list[str]], pods: dict[str, PodFacts]) -> list[str]:
    """Add victims kube-scheduler preempted to the request's ``kube-scheduler`` plan; returns new pods."""
    with transaction.atomic():
        request = _lock_request(request_id)
        observed, _ = Plan.objects.get_or_create(
            request=request,
            source=PlanSource.KUBE_SCHEDULER,
            defaults={"policy": "kube-scheduler", "feasible": True,
                      "reason": "victims kube-scheduler preempted (DisruptionTarget / Preempted events)"},
        )
        known = {e.pod for e in observed.pod_evictions.all()}
        new: list[str] = []
        now = timezone.now()
        for unit, members in sorted(units.items()):
            for pod_key in members:
                if pod_key in known:
                    continue
                namespace, _, name = pod_key.partition("/")
                facts = pods.get(pod_key, PodFacts())
                Eviction.objects.create(
                    plan=observed, namespace=namespace, name=name, pod_uid=facts.uid, node=facts.node,
                    gpus=facts.gpus, victim_unit=unit, state=EvictionState.EVICTED,
                    api_message="observed: preempted by kube-scheduler", finished_at=now,
                )
                new.append(pod_key)
        if not new:
            return []
        rows = list(observed.pod_evictions.all())
        grouped: dict[str, list[str]] = {}
        for row in rows:
            grouped.setdefault(row.victim_unit, []).append(row.pod)
        observed.victims = [
            {"kind": unit.split(" ", 1)[0], "namespace": unit.split(" ", 1)[1].partition("/")[0],
             "name": unit.split(" ", 1)[1].partition("/")[2], "pods": sorted(members)}
            for unit, members in sorted(grouped.items())
        ]
        observed.evictions = sorted(row.pod for row in rows)
        observed.victim_units = len(grouped)
        observed.evicted_pods = len(rows)
        observed.evicted_gpus = sum(row.gpus for row in rows)
        observed.save()
        note("observed.preemption", f"kube-scheduler preempted {len(new)} pods for {request.podgroup}: "
             f"{', '.join(new[:10])}", request=request, plan=observed, data={"pods": new})
        publish("observed.preemption", {**_request_payload(request), "plan": observed.pk, "pods": new})
        return new
