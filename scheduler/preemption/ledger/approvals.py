"""approve mode in the ledger: a plan waits for an operator, who approves, rejects or cancels, or it
expires; or gangweb settles it when its namespace leaves approve mode. Who decided is a typed identity
(``scheduler/preemption/actors.py``), written on the request (``decided_by_kind``, ``decided_by``) and in
its history entry (``data.by``: ``{"kind", "name"}``).

Each function locks the request, checks the move, appends the entry and publishes the event after
commit, like every ledger write; the permission and freshness checks are the caller's
(``scheduler/preemption/actions.py``).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from scheduler.preemption.actors import GANGWEB_ITSELF, Actor
from scheduler.preemption.events import publish
from scheduler.preemption.ledger.evictions import fail_unstarted_evictions
from scheduler.preemption.ledger.history import lock_request, move, note, request_payload
from scheduler.preemption.models import PlanSource, PreemptionRequest, RequestState
from scheduler.words import utc


def await_approval(request_id: int, deadline: datetime) -> PreemptionRequest | None:
    """planned -> awaiting_approval (approve mode), until ``deadline``; None if no longer planned."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.PLANNED:
            return None
        request.approval_deadline = deadline
        move(
            request,
            RequestState.AWAITING_APPROVAL,
            f"waiting for an operator's approval until {utc(deadline)}",
        )
        note(
            "request.awaiting_approval",
            f"approve mode: the plan for {request.podgroup} waits for an operator until {utc(deadline)}",
            request=request,
            data={"deadline": deadline.isoformat()},
        )
        publish("request.awaiting_approval", request_payload(request))
        return request


def _decide(request: PreemptionRequest, state: str, by: Actor, kind: str, reason: str) -> PreemptionRequest:
    request.decided_by_kind, request.decided_by, request.decided_at = by.kind, by.name, timezone.now()
    move(request, state, reason)
    note(kind, reason, request=request, data={"by": {"kind": by.kind, "name": by.name}})
    if state != RequestState.PLANNED:
        for plan_id in request.plans.filter(source=PlanSource.ENGINE).values_list("pk", flat=True):
            fail_unstarted_evictions(plan_id, f"not evicted: request {state}: {reason}")
    publish(kind, request_payload(request))
    return request


def approve(request_id: int, by: Actor) -> PreemptionRequest | None:
    """awaiting_approval -> planned (then executed as in enforce mode); None if it was not awaiting."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.AWAITING_APPROVAL:
            return None
        return _decide(
            request, RequestState.PLANNED, by, "request.approved", f"approved by {by.display}; executing"
        )


def refuse_stale(request_id: int, by: Actor, why: str) -> PreemptionRequest | None:
    """awaiting_approval -> superseded: the approval found the plan stale (the caller re-plans)."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.AWAITING_APPROVAL:
            return None
        reason = f"approval by {by.display} refused, nothing evicted: the plan is stale: {why}"
        return _decide(request, RequestState.SUPERSEDED, by, "request.approval_refused", reason)


def reject(request_id: int, by: Actor, reason: str = "") -> PreemptionRequest | None:
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.AWAITING_APPROVAL:
            return None
        text = f"rejected by {by.display}" + (f": {reason}" if reason else "")
        return _decide(request, RequestState.REJECTED, by, "request.rejected", text)


CANCELLABLE = (
    RequestState.PENDING,
    RequestState.PLANNING,
    RequestState.PLANNED,
    RequestState.AWAITING_APPROVAL,
)


def cancel(request_id: int, by: Actor, reason: str = "") -> PreemptionRequest | None:
    """Any request that has not begun executing -> cancelled; None if it had (or was finished)."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state not in CANCELLABLE:
            return None
        text = f"cancelled by {by.display}" + (f": {reason}" if reason else "")
        return _decide(request, RequestState.CANCELLED, by, "request.cancelled", text)


def expire(request_id: int, now: datetime | None = None) -> PreemptionRequest | None:
    """awaiting_approval -> expired once its deadline has passed; None otherwise."""
    now = now or timezone.now()
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.AWAITING_APPROVAL or not request.approval_deadline:
            return None
        if request.approval_deadline > now:
            return None
        reason = f"not approved by {utc(request.approval_deadline)}: the plan expired, nothing evicted"
        return _decide(request, RequestState.EXPIRED, GANGWEB_ITSELF, "request.expired", reason)


def leave_approve_mode(request_id: int, mode: str) -> PreemptionRequest | None:
    """awaiting_approval -> superseded by gangweb: the request's namespace is now in ``mode``, not approve,
    so no operator is asked any more (the caller re-plans the gang in ``mode``); None if it was not awaiting."""
    with transaction.atomic():
        request = lock_request(request_id)
        if request.state != RequestState.AWAITING_APPROVAL:
            return None
        reason = (
            f"namespace {request.namespace} is now in {mode} mode, not approve: the waiting plan is "
            f"settled, nothing evicted by it; the gang is planned again in {mode} mode"
        )
        return _decide(request, RequestState.SUPERSEDED, GANGWEB_ITSELF, "request.mode_changed", reason)
