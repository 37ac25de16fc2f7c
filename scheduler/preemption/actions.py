"""What people do to preemption requests: approve, reject, cancel (docs/design.md, "Modes").

Plain functions for the API and any other front (``POST /api/v1/requests/{id}/approve|reject|cancel``).
``by`` is the caller's scope (``gangweb.access.scope.Scope`` or anything with ``actor`` and
``may(action, namespace)``): the pipeline never imports the project, so it is duck-typed here. Every
action needs the operator role in the request's namespace and is written to the ledger with the caller's
typed identity (``actors.Actor``: a local user and a Kubernetes user of one name are two people).

An approval re-checks the plan against a fresh snapshot first. A plan whose victims changed (gone,
replaced, moved, terminating, the gang would not fit) is refused: the request is superseded and a new
one re-plans the gang (``PlanChanged`` says which). Otherwise the request is handed to the execution
path of enforce mode (``tasks.execute_plan``), which checks once more under the node locks.
"""

from __future__ import annotations

from typing import Protocol

from django.db import transaction
from django.utils import timezone

from scheduler.preemption.actors import Actor
from scheduler.preemption.ledger import approvals
from scheduler.preemption.models import PreemptionRequest, RequestState


class Caller(Protocol):
    @property
    def actor(self) -> Actor: ...

    def may(self, action: str, namespace: str | None = None) -> bool: ...


class ActionError(Exception):
    """An action that was not done; the message says why in plain words."""


class NotAllowed(ActionError, PermissionError):
    """The caller's role in the request's namespace does not allow the action (HTTP 403)."""


class NotFound(ActionError, LookupError):
    """No such request, or none the caller may see (HTTP 404)."""


class Conflict(ActionError):
    """The request is not in a state the action applies to (HTTP 409)."""


class PlanChanged(Conflict):
    """The approval found the plan stale: refused, and the gang is planned again."""

    def __init__(self, message: str, replanned_request: int | None) -> None:
        super().__init__(message)
        self.replanned_request = replanned_request


def _request_for(request_id: int, by: Caller, action: str) -> PreemptionRequest:
    request = PreemptionRequest.objects.filter(pk=request_id).first()
    if request is None or not by.may("read", request.namespace):
        raise NotFound(f"no preemption request {request_id}")
    if not by.may(action, request.namespace):
        raise NotAllowed(
            f"{by.actor.display if by.actor.name else 'this caller'} may not {action} requests in namespace {request.namespace} (operator role needed)"
        )
    return request


def _not_in(request: PreemptionRequest, action: str, wanted: str) -> Conflict:
    request.refresh_from_db()
    return Conflict(f"request {request.pk} is {request.state}, not {wanted}: nothing to {action}")


def approve(request_id: int, *, by: Caller) -> PreemptionRequest:
    """Re-check, then execute the plan of a request awaiting approval."""
    from scheduler.preemption import planning, tasks
    from scheduler.preemption.execution import latest_plan, reaping
    from scheduler.preemption.execution.recheck import recheck
    from scheduler.preemption.runtime import get_cluster

    request = _request_for(request_id, by, "approve")
    if request.state != RequestState.AWAITING_APPROVAL:
        raise _not_in(request, "approve", "awaiting approval")
    if request.approval_deadline and request.approval_deadline <= timezone.now():
        approvals.expire(request_id)
        raise _not_in(request, "approve", "awaiting approval (its approval time ran out)")
    plan = latest_plan(request_id)
    if plan is None or not plan.feasible:
        raise Conflict(f"request {request_id} has no feasible plan to approve")
    if plan.policy == reaping.REAP:  # a reap: the gang still broken, its members the same pods
        verdict, _ = reaping.recheck(get_cluster(), plan, list(plan.pod_evictions.all()), budgets=False)
    else:
        objects = planning.fresh_objects(get_cluster())
        verdict = recheck(
            planning.reserve_room(objects, request.podgroup), plan, list(plan.pod_evictions.all())
        )
    if not verdict.ok:
        with transaction.atomic():
            refused = approvals.refuse_stale(request_id, by.actor, verdict.reason)
            if refused is None:
                raise _not_in(request, "approve", "awaiting approval")
            again = None if verdict.moot else tasks.replan(refused, f"approval refused: {verdict.reason}")
        raise PlanChanged(
            f"approval refused, nothing evicted: the plan is stale ({verdict.reason})"
            + (f"; the gang is planned again as request {again}" if again else ""),
            again,
        )
    with transaction.atomic():
        approved = approvals.approve(request_id, by.actor)
        if approved is None:
            raise _not_in(request, "approve", "awaiting approval")
        tasks.after_commit(tasks.execute_plan, request_id)
    return approved


def reject(request_id: int, *, by: Caller, reason: str = "") -> PreemptionRequest:
    request = _request_for(request_id, by, "reject")
    rejected = approvals.reject(request_id, by.actor, reason)
    if rejected is None:
        raise _not_in(request, "reject", "awaiting approval")
    return rejected


def cancel(request_id: int, *, by: Caller, reason: str = "") -> PreemptionRequest:
    """Any request that has not begun executing (evictions cannot be undone, so not those)."""
    request = _request_for(request_id, by, "cancel")
    cancelled = approvals.cancel(request_id, by.actor, reason)
    if cancelled is None:
        raise _not_in(request, "cancel", "pending, planning, planned or awaiting approval")
    return cancelled


def expire_due() -> list[int]:
    """Expire every plan whose approval time ran out (the beat task ``scheduler.expire_approvals``)."""
    due = PreemptionRequest.objects.filter(
        state=RequestState.AWAITING_APPROVAL, approval_deadline__lte=timezone.now()
    ).values_list("pk", flat=True)
    return [pk for pk in list(due) if approvals.expire(pk) is not None]
