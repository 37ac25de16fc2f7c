"""What a request's plan leads to, by its mode: a decision of the pipeline, so the Celery task that
plans only enqueues what is decided here.

observe mode records the plan and ends; a plan breaking a disruption budget under
``GANGWEB_PDB_POLICY=respect`` ends infeasible; approve mode waits for an operator or the deadline;
enforce mode executes.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scheduler.preemption import ledger, planning
from scheduler.preemption.ledger import approvals
from scheduler.preemption.models import Mode, PreemptionRequest, RequestState


class Next(StrEnum):
    NOTHING = "nothing"  # the request was no longer being planned (cancelled, superseded)
    OBSERVED = "observed"
    INFEASIBLE = "infeasible"
    APPROVAL = "approval"
    EXECUTE = "execute"


def next_step(request: PreemptionRequest, pdb_violations: int) -> Next:
    """The step after the plan of ``request``, which breaks ``pdb_violations`` disruption budgets."""
    if request.state != RequestState.PLANNED:
        return Next.NOTHING
    if request.mode == Mode.OBSERVE:
        return Next.OBSERVED
    if pdb_violations and settings.GANGWEB_PDB_POLICY == "respect":
        # The engine ranks budget-breaking plans last, so the best one breaking a budget means every plan
        # it found does (docs/pipeline.md, "Disruption budgets").
        return Next.INFEASIBLE
    if request.mode == Mode.APPROVE:
        return Next.APPROVAL
    return Next.EXECUTE


def after_plan(request_id: int, result: planning.PlanResult, *, planned_by: str) -> Next:
    """Record the plan and take its next step, in one transaction; ``Next.EXECUTE`` is left to the caller
    (the Celery task enqueues the execution once this commits)."""
    with transaction.atomic():
        stored = ledger.record_plan(
            request_id,
            result.plan,
            cost=result.cost,
            pods=result.pods,
            planning_seconds=result.seconds,
            planned_by=planned_by,
            decision=result.decision,
            parts=result.parts,
        )
        step = next_step(stored.request, stored.pdb_violations)
        if step == Next.OBSERVED:
            ledger.finish(
                request_id,
                RequestState.OBSERVED,
                "observe mode: gangweb's plan is recorded beside kube-scheduler's actions, not executed",
            )
        elif step == Next.INFEASIBLE:
            ledger.finish(
                request_id,
                RequestState.INFEASIBLE,
                f"every plan found breaks a disruption budget (the best one by {stored.pdb_violations} "
                "disruptions); GANGWEB_PDB_POLICY=respect executes only plans the budgets allow",
            )
        elif step == Next.APPROVAL:
            # An operator approves (scheduler/preemption/actions.py), or the plan expires.
            deadline = timezone.now() + timedelta(seconds=settings.GANGWEB_APPROVAL_TIMEOUT_SECONDS)
            approvals.await_approval(request_id, deadline)
        return step
