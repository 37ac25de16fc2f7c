"""The ledger's history and the helpers every ledger write shares.

``note`` appends one ``LedgerEntry`` (the append-only history the dashboard and the API read);
``lock_request`` and ``move`` are how a request row is locked and moved to its next state.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from scheduler.preemption.events import publish
from scheduler.preemption.models import LedgerEntry, Plan, PreemptionRequest, RequestState

TERMINAL_REQUEST_STATES = frozenset(
    {
        RequestState.SUCCEEDED,
        RequestState.FAILED,
        RequestState.INFEASIBLE,
        RequestState.SUPERSEDED,
        RequestState.OBSERVED,
        RequestState.REJECTED,
        RequestState.EXPIRED,
        RequestState.CANCELLED,
    }
)


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


def request_payload(request: PreemptionRequest) -> dict[str, Any]:
    return {
        "request": request.pk,
        "podGroup": request.podgroup,
        "mode": request.mode,
        "state": request.state,
        "reason": request.reason,
        **({"decidedBy": request.decider.as_json()} if request.decider else {}),
        **({"approvalDeadline": request.approval_deadline.isoformat()} if request.approval_deadline else {}),
    }


def lock_request(request_id: int) -> PreemptionRequest:
    return PreemptionRequest.objects.select_for_update().get(pk=request_id)


def move(request: PreemptionRequest, new_state: str, reason: str | None = None) -> None:
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


def record_podgroup_created(namespace: str, name: str, message: str, data: dict[str, Any]) -> LedgerEntry:
    """A PodGroup the ensurer created for admitted pods: a ``podgroup.created`` entry and live event."""
    with transaction.atomic():
        entry = LedgerEntry.objects.create(
            kind="podgroup.created", namespace=namespace, name=name, message=message, data=data
        )
        publish("podgroup.created", data)
        return entry
