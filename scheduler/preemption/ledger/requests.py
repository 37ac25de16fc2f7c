"""Preemption requests through their states: opened, planned, executing, finished.

Each function runs in its own transaction, locks the request row (``select_for_update``), checks that
the move is legal, appends a history entry and publishes the matching live event once the transaction
commits.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from scheduler import tracing
from scheduler.preemption import metrics
from scheduler.preemption.events import publish
from scheduler.preemption.facts import VictimFacts
from scheduler.preemption.ledger.evictions import fail_unstarted_evictions
from scheduler.preemption.ledger.history import (
    TERMINAL_REQUEST_STATES,
    lock_request,
    move,
    note,
    request_payload,
)
from scheduler.preemption.models import (
    ACTIVE_REQUEST_STATES,
    Eviction,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)
from scheduler.words import plural


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
        trace_id, trace_span = tracing.start_request(namespace, name, **{"gangweb.trigger": trigger})
        with transaction.atomic():
            request = PreemptionRequest.objects.create(
                namespace=namespace,
                name=name,
                mode=mode,
                policy=policy,
                trigger=trigger,
                trace_id=trace_id,
                trace_span=trace_span,
            )
            note("request.opened", f"{request.podgroup} is unschedulable: {trigger}", request=request)
            publish("request.opened", request_payload(request))
            return request, True
    except IntegrityError:
        # Another worker opened it between our read and our insert: the partial unique index wins.
        return PreemptionRequest.objects.get(
            namespace=namespace, name=name, state__in=ACTIVE_REQUEST_STATES
        ), False


def open_new_request(
    namespace: str, name: str, *, pause_seconds: float, mode: str, policy: str = "gangweb", trigger: str = ""
) -> PreemptionRequest | None:
    """A new request for the gang, None when it has an active one or is ``cooling_down``.

    The active request is read before the pause: a request that succeeds between the two reads is then
    seen by one of them. Read the other way round, it was seen by neither and a second plan was opened at
    once for the gang the first had just made room for (found in the demo, 7 ms after a success)."""
    if PreemptionRequest.objects.filter(
        namespace=namespace, name=name, state__in=ACTIVE_REQUEST_STATES
    ).exists():
        return None
    if cooling_down(namespace, name, pause_seconds=pause_seconds):
        return None
    request, created = open_request(namespace, name, mode=mode, policy=policy, trigger=trigger)
    return request if created else None


def begin_planning(request_id: int) -> PreemptionRequest | None:
    """pending -> planning; None when the request is no longer waiting for a plan."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.PENDING:
            return None
        move(request, RequestState.PLANNING)
        note("request.planning", f"planning {request.podgroup} with policy {request.policy}", request=request)
        return request


def requeue_planning(request_id: int, why: str) -> None:
    """planning -> pending, for a planning task that died or must run again."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.PLANNING:
            return
        move(request, RequestState.PENDING)
        note("request.requeued", why, request=request)


def record_plan(
    request_id: int,
    plan: dict[str, Any],
    *,
    cost: dict[str, Any],
    pods: dict[str, VictimFacts],
    planning_seconds: float = 0.0,
    planned_by: str = "single",
    source: str = PlanSource.ENGINE,
    decision: dict[str, Any] | None = None,
    parts: dict[str, float] | None = None,
) -> Plan:
    """Store an engine plan (``gang plan`` JSON) and its evictions; planning -> planned | infeasible.
    ``decision`` (``planning.decision_facts``) is kept in the ``plan.created`` entry for the decision view,
    ``parts`` (``PlanResult.parts``) as its ``seconds``."""
    with transaction.atomic():
        request = lock_request(request_id)
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
            outcome=plan.get("outcome") or "",
            optimality=plan.get("optimality"),
            pdb_violations=cost.get("pdb_violations", 0),
            max_victim_priority=cost.get("max_victim_priority"),
            victim_priority_sum=cost.get("victim_priority_sum", 0),
            victim_units=cost.get("victim_units", len(plan.get("victims") or [])),
            evicted_pods=len(plan.get("evictions") or []),
            evicted_gpus=sum(pods.get(p, VictimFacts()).gpus for p in plan.get("evictions") or []),
            lost_gpu_seconds=cost.get("lost_gpu_seconds", 0.0),
            planning_seconds=planning_seconds,
            planned_by=planned_by,
            resource_versions=plan.get("resourceVersions") or {},
        )
        for victim in stored.victims:
            unit = f"{victim.get('kind', 'Pod')} {victim.get('namespace')}/{victim.get('name')}"
            members = victim.get("pods") or []
            unit_gpus = sum(pods.get(p, VictimFacts()).gpus for p in members)
            for pod_key in members:
                namespace, _, name = pod_key.partition("/")
                facts = pods.get(pod_key, VictimFacts())
                Eviction.objects.create(
                    plan=stored,
                    namespace=namespace,
                    name=name,
                    pod_uid=facts.uid,
                    node=facts.node,
                    gpus=facts.gpus,
                    victim_unit=unit,
                    estimated_lost_gpu_seconds=_pod_share(
                        victim.get("lostGpuSeconds"), facts.gpus, unit_gpus
                    ),
                    work_since=_when(facts.started),
                )
        if source == PlanSource.ENGINE:
            if request.state == RequestState.PLANNING:
                move(
                    request,
                    RequestState.PLANNED if stored.feasible else RequestState.INFEASIBLE,
                    stored.reason,
                )
            note(
                "plan.created",
                f"plan {stored.pk}: {plural(len(stored.evictions), 'pod')} in {plural(stored.victim_units, 'unit')}; "
                f"{stored.reason}",
                request=request,
                plan=stored,
                data={
                    "plan": stored.as_gang_plan(),
                    "plannedBy": planned_by,
                    "decision": decision or {},
                    "seconds": parts or {},
                },
            )
        payload = {**request_payload(request), "plan": stored.pk, "source": source, **stored.as_gang_plan()}
        publish("plan.created", payload)
        transaction.on_commit(lambda: metrics.observe_plan(stored, planning_seconds))
        if request.state == RequestState.INFEASIBLE:
            _finish_side_effects(request)
        return stored


def begin_execution(request_id: int) -> PreemptionRequest | None:
    """planned -> executing; returns the request when it is (now or already) executing."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state == RequestState.EXECUTING:
            return request
        if request.state != RequestState.PLANNED:
            return None
        move(request, RequestState.EXECUTING)
        note("request.executing", f"executing the plan for {request.podgroup}", request=request)
        return request


def finish(request_id: int, state: str, reason: str, data: dict[str, Any] | None = None) -> PreemptionRequest:
    """Move a request to a terminal state (no-op if it already is terminal)."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state in TERMINAL_REQUEST_STATES:
            return request
        move(request, state, reason)
        note(f"request.{state}", reason, request=request, data=data)
        if state in (RequestState.FAILED, RequestState.SUPERSEDED):
            # Rows that never reached the API must not look as if they still might.
            for plan_id in request.plans.filter(source=PlanSource.ENGINE).values_list("pk", flat=True):
                fail_unstarted_evictions(plan_id, f"not evicted: request {state}: {reason}")
        _finish_side_effects(request)
        return request


def _pod_share(unit_lost: float | None, gpus: int, unit_gpus: int) -> float | None:
    """A pod's part of its victim unit's estimated lost work (the plan's ``lostGpuSeconds``), by its GPUs."""
    if unit_lost is None:
        return None
    return round(float(unit_lost) * (gpus / unit_gpus if unit_gpus else 0.0), 3)


def _when(epoch: float | None) -> datetime | None:
    return datetime.fromtimestamp(epoch, tz=UTC) if epoch is not None else None


def _finish_side_effects(request: PreemptionRequest) -> None:
    payload = request_payload(request)
    if request.state == RequestState.SUCCEEDED:
        publish("gang.placed", payload)
    elif request.state in (RequestState.FAILED, RequestState.INFEASIBLE):
        publish("request.failed", payload)
    else:
        publish("request.finished", payload)
    if request.mode in ("enforce", "approve"):
        result = str(request.state)
        transaction.on_commit(lambda: metrics.ATTEMPTS.labels(result=result).inc())


# How many finished requests of a gang say when its next one may open (the pause doubles up to 16x).
RETRY_LOOKBACK = 5


def cooling_down(namespace: str, name: str, *, pause_seconds: float) -> bool:
    """A gang whose last request finished moments ago waits before the next one (no request storms).

    The pause doubles with each request in a row that ended infeasible or failed (up to 16x): a gang
    that cannot be placed is looked at again, but less and less often, until something succeeds.
    """
    recent = list(
        PreemptionRequest.objects.filter(namespace=namespace, name=name, finished_at__isnull=False)
        .exclude(state=RequestState.SUPERSEDED)
        .order_by("-finished_at")
        .values_list("state", "finished_at")[:RETRY_LOOKBACK]
    )
    again = retry_at(recent, pause_seconds=pause_seconds)
    return again is not None and timezone.now() < again


def recent_requests(keys: Iterable[str], *fields: str) -> dict[str, list[PreemptionRequest]]:
    """Each gang's newest requests by gang key, newest first (``RETRY_LOOKBACK`` + 1 at most), in one
    query however many gangs; ``fields`` are loaded beside the ones ``next_request_at`` reads."""
    wanted = set(keys)
    if not wanted:
        return {}
    namespaces = {key.split("/", 1)[0] for key in wanted}
    names = {key.split("/", 1)[1] for key in wanted}
    rows: dict[str, list[PreemptionRequest]] = {}
    candidates = PreemptionRequest.objects.filter(namespace__in=namespaces, name__in=names).order_by(
        "-created_at", "-id"
    )
    for request in candidates.only("id", "namespace", "name", "state", "finished_at", *fields):
        if request.podgroup not in wanted:
            continue
        found = rows.setdefault(request.podgroup, [])
        if len(found) <= RETRY_LOOKBACK:
            found.append(request)
    return rows


def next_request_at(found: list[PreemptionRequest], *, pause_seconds: float) -> datetime | None:
    """When the gang of ``found`` (``recent_requests``) may get its next request; None while its newest
    is active or when it never finished one."""
    if found[0].is_active:
        return None
    finished = [
        (r.state, r.finished_at) for r in found if r.finished_at and r.state != RequestState.SUPERSEDED
    ]
    return retry_at(finished[:RETRY_LOOKBACK], pause_seconds=pause_seconds)


def retry_at(recent: list[tuple[str, datetime]], *, pause_seconds: float) -> datetime | None:
    """When the gang may get its next request, from its last finished requests (newest first, superseded
    ones left out, at most ``RETRY_LOOKBACK``); None when it never had one. The API shows it."""
    if not recent:
        return None
    misses = 0
    for state, _ in recent:
        if state not in (RequestState.INFEASIBLE, RequestState.FAILED):
            break
        misses += 1
    pause = pause_seconds * 2 ** max(0, misses - 1)
    return recent[0][1] + timedelta(seconds=pause)
