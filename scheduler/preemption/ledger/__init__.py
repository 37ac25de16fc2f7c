"""Every write to the preemption ledger, in one place.

Each function runs in its own transaction, locks the row it changes (``select_for_update``), checks
that the transition is legal, appends a history entry, and publishes the matching live event once the
transaction commits. Callers (tasks, execution, observe, the PodGroup ensurer) never write the models
directly, so the ledger and the events cannot drift apart. By concern: ``requests`` (a request's states
and its plans, and the pause between two requests of one gang), ``evictions`` (the rows of a plan's
victims), ``notices`` (a plan's notice to its victims), ``observed`` (what kube-scheduler preempted) and ``history`` (the entries and shared helpers).
"""

from scheduler.preemption.ledger.evictions import (
    claim_all_for_eviction,
    claim_for_eviction,
    fail_unstarted_evictions,
    note_budget_spent,
    record_attempt_error,
    record_dry_run,
    record_dry_runs,
    record_eviction,
)
from scheduler.preemption.ledger.history import TERMINAL_REQUEST_STATES, note, record_podgroup_created
from scheduler.preemption.ledger.notices import end_notice, give_notice, withdraw_notice
from scheduler.preemption.ledger.observed import record_observed_victims
from scheduler.preemption.ledger.requests import (
    begin_execution,
    begin_planning,
    cooling_down,
    finish,
    open_new_request,
    open_request,
    record_plan,
    requeue_planning,
    retry_at,
)

__all__ = [
    "TERMINAL_REQUEST_STATES",
    "begin_execution",
    "begin_planning",
    "claim_all_for_eviction",
    "claim_for_eviction",
    "cooling_down",
    "end_notice",
    "fail_unstarted_evictions",
    "finish",
    "give_notice",
    "note",
    "note_budget_spent",
    "open_new_request",
    "open_request",
    "record_attempt_error",
    "record_dry_run",
    "record_dry_runs",
    "record_eviction",
    "record_observed_victims",
    "record_plan",
    "record_podgroup_created",
    "requeue_planning",
    "retry_at",
    "withdraw_notice",
]
