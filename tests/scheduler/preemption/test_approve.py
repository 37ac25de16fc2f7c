"""approve mode in one process: a plan waits for an operator, who approves (re-checked, then executed),
rejects or cancels it, or it expires; every decision is in the ledger with who made it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from gangweb.access.scope import OPERATOR, VIEWER, Scope
from scheduler.preemption import actions
from scheduler.preemption.actors import LOCAL, Actor
from scheduler.preemption.models import LedgerEntry, PreemptionRequest, RequestState
from scheduler.preemption.tasks import detect_unschedulable_gangs, expire_approvals

pytestmark = pytest.mark.django_db(transaction=True)

OPERATOR_A = Scope(user="olga", per_namespace={"team-a": OPERATOR})
VIEWER_A = Scope(user="victor", per_namespace={"team-a": VIEWER})
OPERATOR_B = Scope(user="bea", per_namespace={"team-b": OPERATOR})


@pytest.fixture(autouse=True)
def in_process_tasks(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_LOCK_TTL_SECONDS = 2
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "approve"}


def awaiting(cluster) -> PreemptionRequest:
    detect_unschedulable_gangs.apply().get()
    request = PreemptionRequest.objects.get(namespace="team-a", name="train")
    assert request.state == RequestState.AWAITING_APPROVAL, request.reason
    assert request.mode == "approve" and request.approval_deadline > timezone.now()
    assert not cluster.evictions_of("evict"), "nothing is evicted before an operator approves"
    return request


def entries(request) -> list[tuple[str, dict]]:
    return [(e.kind, e.data) for e in LedgerEntry.objects.filter(request=request).order_by("id")]


def test_an_approved_plan_is_rechecked_then_executed_and_the_ledger_names_the_operator(cluster, published):
    request = awaiting(cluster)
    actions.approve(request.pk, by=OPERATOR_A)
    request.refresh_from_db()
    assert request.state == RequestState.SUCCEEDED, request.reason
    assert request.decider == Actor(LOCAL, "olga") and request.decided_at is not None
    plan = request.plans.get()
    assert sorted(cluster.evictions_of("evict")) == sorted(plan.evictions)
    kinds = [kind for kind, _ in entries(request)]
    assert (
        kinds.index("request.awaiting_approval")
        < kinds.index("request.approved")
        < kinds.index("execution.recheck")
    )
    assert ("request.approved", {"by": {"kind": "local", "name": "olga"}}) in entries(request)
    events = [name for name, _ in published]
    assert "request.awaiting_approval" in events and "request.approved" in events


def test_a_viewer_may_not_approve_and_another_tenant_does_not_even_find_it(cluster):
    request = awaiting(cluster)
    with pytest.raises(actions.NotAllowed, match="operator role"):
        actions.approve(request.pk, by=VIEWER_A)
    with pytest.raises(PermissionError):
        actions.reject(request.pk, by=VIEWER_A)
    with pytest.raises(actions.NotFound):
        actions.approve(request.pk, by=OPERATOR_B)
    request.refresh_from_db()
    assert request.state == RequestState.AWAITING_APPROVAL and not cluster.evictions_of("evict")


def test_an_approval_of_a_plan_whose_victims_changed_is_refused_and_the_gang_replanned(cluster):
    request = awaiting(cluster)
    victim = sorted(request.plans.get().evictions)[0]
    cluster.remove_pod(victim)
    with pytest.raises(actions.PlanChanged, match="stale") as refused:
        actions.approve(request.pk, by=OPERATOR_A)
    request.refresh_from_db()
    assert request.state == RequestState.SUPERSEDED and request.decider == Actor(LOCAL, "olga")
    assert not cluster.evictions_of("evict")
    again = PreemptionRequest.objects.get(pk=refused.value.replanned_request)
    # The new request is planned on the cluster as it is now and waits for its own approval.
    assert again.state == RequestState.AWAITING_APPROVAL and victim not in again.plans.get().evictions
    assert any(kind == "request.approval_refused" for kind, _ in entries(request))


def test_reject_and_cancel_are_recorded_with_who_and_approving_afterwards_is_a_conflict(cluster):
    request = awaiting(cluster)
    actions.reject(request.pk, by=OPERATOR_A, reason="the run finishes tonight")
    request.refresh_from_db()
    assert request.state == RequestState.REJECTED and "the run finishes tonight" in request.reason
    with pytest.raises(actions.Conflict, match="is rejected"):
        actions.approve(request.pk, by=OPERATOR_A)
    with pytest.raises(actions.Conflict):
        actions.cancel(request.pk, by=OPERATOR_A)
    assert not cluster.evictions_of("evict")


def test_an_operator_cancels_a_request_before_it_executes(cluster):
    from scheduler.preemption import ledger
    from scheduler.preemption.tasks import plan_request

    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="test")
    actions.cancel(request.pk, by=OPERATOR_A, reason="maintenance")
    plan_request.apply(args=[request.pk]).get()  # a planning task already queued does nothing now
    request.refresh_from_db()
    assert request.state == RequestState.CANCELLED and request.decider == Actor(LOCAL, "olga")
    assert ("request.cancelled", {"by": {"kind": "local", "name": "olga"}}) in entries(request)
    assert not request.plans.exists() and not cluster.evictions_of("evict")


def test_a_plan_not_approved_in_time_expires(cluster, settings):
    request = awaiting(cluster)
    PreemptionRequest.objects.filter(pk=request.pk).update(
        approval_deadline=timezone.now() - timedelta(seconds=1)
    )
    assert expire_approvals.apply().get() == [request.pk]
    request.refresh_from_db()
    assert request.state == RequestState.EXPIRED and not cluster.evictions_of("evict")
    with pytest.raises(actions.Conflict, match="expired"):
        actions.approve(request.pk, by=OPERATOR_A)


def test_approving_past_the_deadline_expires_instead(cluster):
    request = awaiting(cluster)
    PreemptionRequest.objects.filter(pk=request.pk).update(
        approval_deadline=timezone.now() - timedelta(seconds=1)
    )
    with pytest.raises(actions.Conflict, match="ran out"):
        actions.approve(request.pk, by=OPERATOR_A)
    request.refresh_from_db()
    assert request.state == RequestState.EXPIRED and not cluster.evictions_of("evict")


def test_leaving_approve_mode_for_enforce_replans_and_evicts_on_the_next_detection_pass(cluster, settings):
    request = awaiting(cluster)
    settings.GANGWEB_NAMESPACE_MODES = {}  # the namespace is back in the default mode: enforce
    assert settings.GANGWEB_MODE == "enforce"
    detect_unschedulable_gangs.apply().get()
    request.refresh_from_db()
    assert request.state == RequestState.SUPERSEDED and request.decider == Actor("gangweb", "gangweb")
    assert "now in enforce mode" in request.reason
    assert [kind for kind, _ in entries(request)][-1] == "request.mode_changed"
    again = PreemptionRequest.objects.exclude(pk=request.pk).get(namespace="team-a", name="train")
    assert again.mode == "enforce" and again.state == RequestState.SUCCEEDED, again.reason
    assert sorted(cluster.evictions_of("evict")) == sorted(again.plans.get().evictions)


def test_leaving_approve_mode_for_observe_closes_the_waiting_plan_and_evicts_nothing(cluster, settings):
    request = awaiting(cluster)
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "observe"}
    detect_unschedulable_gangs.apply().get()
    request.refresh_from_db()
    assert request.state == RequestState.SUPERSEDED and "now in observe mode" in request.reason
    again = PreemptionRequest.objects.exclude(pk=request.pk).get(namespace="team-a", name="train")
    assert again.mode == "observe" and again.state == RequestState.OBSERVED, again.reason
    assert not cluster.evictions_of("evict")
