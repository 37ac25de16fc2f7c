"""Executing plans: re-check, dry run, all-or-nothing units, idempotency, resumption, node locks."""

from __future__ import annotations

import pytest

from scheduler.preemption import kubeevents, ledger, locks
from scheduler.preemption.execution import PREEMPTION_CONDITION, execute
from scheduler.preemption.execution.evictor import RetryPolicy
from scheduler.preemption.models import Eviction, EvictionState, LedgerEntry, RequestState
from tests.scheduler.preemption.builders import FakeCluster, small_cluster

pytestmark = pytest.mark.django_db(transaction=True)

FAST = RetryPolicy(attempts=4, first_delay=0.01, max_delay=0.02)


@pytest.fixture(autouse=True)
def short_locks(settings):
    settings.GANGWEB_LOCK_TTL_SECONDS = 2


def victims_of(plan) -> list[str]:
    return sorted(plan.evictions)


def test_plan_needs_victims_and_they_are_lower_priority(cluster, planned_request):
    request, plan = planned_request()
    assert request.state == RequestState.PLANNED and plan.feasible
    assert victims_of(plan), "the scenario must need preemption"
    assert all(v["priority"] < 100 for v in plan.victims)


def test_execution_evicts_every_victim_once_and_marks_them(cluster, planned_request, published):
    request, plan = planned_request()
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    assert cluster.evictions_of("dry_run") == {pod: 1 for pod in victims_of(plan)}
    assert cluster.evictions_of("evict") == {pod: 1 for pod in victims_of(plan)}
    assert sorted(cluster.disruption_targets) == victims_of(plan)
    assert kubeevents.flush()
    preempted = sorted(
        f"{e.namespace}/{e.involved_name}"
        for e in cluster.events
        if e.reason == "Preempted" and e.involved_kind == "Pod"
    )
    assert preempted == victims_of(plan)
    victim_units = {v["namespace"] + "/" + v["name"] for v in plan.victims if v.get("kind") == "PodGroup"}
    # One Event on each victim PodGroup, however many of its pods went (the series counts them).
    assert sorted(
        f"{e.namespace}/{e.involved_name}"
        for e in cluster.events
        if e.involved_kind == "PodGroup" and e.reason == "Preempted"
    ) == sorted(victim_units)
    assert {
        (e.related_kind, e.related_namespace, e.related_name)
        for e in cluster.events
        if e.reason == "Preempted"
    } == {("PodGroup", "team-a", "train")}
    assert [e.reason for e in cluster.events if (e.namespace, e.involved_name) == ("team-a", "train")] == [
        "PreemptionPlanned",
        "PreemptionExecuted",
    ]
    assert [c[2:] for c in cluster.podgroup_conditions if c[1] == PREEMPTION_CONDITION] == [
        ("True", "Evicting"),  # set beside the evictions, always before the end
        ("False", "VictimsEvicted"),
    ]
    assert set(plan.pod_evictions.values_list("state", flat=True)) == {EvictionState.EVICTED}
    request.refresh_from_db()
    assert request.state == RequestState.SUCCEEDED and request.finished_at
    events = [name for name, _ in published]
    assert events.count("eviction") == 2 * len(victims_of(plan))  # dry run + real, per pod
    assert events[-1] == "gang.placed"


def test_a_dry_run_refusal_evicts_nothing_and_fails_the_plan_with_the_reason(
    cluster, planned_request, published
):
    request, plan = planned_request()
    refused = victims_of(plan)[-1]
    cluster.dry_run_answers[refused] = 429
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.FAILED
    assert cluster.evictions_of("evict") == {}
    request.refresh_from_db()
    assert request.state == RequestState.FAILED
    assert refused in request.reason and "429" in request.reason and "nothing evicted" in request.reason
    states = dict(plan.pod_evictions.values_list("namespace", "state"))
    rows = {e.pod: e.state for e in plan.pod_evictions.all()}
    assert rows[refused] == EvictionState.DRY_RUN_REFUSED
    assert all(state in (EvictionState.FAILED, EvictionState.DRY_RUN_REFUSED) for state in rows.values()), (
        states
    )
    assert "request.failed" in [name for name, _ in published]


def test_a_unit_failing_part_way_is_finished_by_retrying(cluster, planned_request):
    request, plan = planned_request()
    flaky = victims_of(plan)[0]
    cluster.real_answers[flaky] = [500, 503]
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    row = Eviction.objects.get(plan=plan, namespace=flaky.split("/")[0], name=flaky.split("/")[1])
    assert (row.state, row.attempts) == (EvictionState.EVICTED, 3)
    assert cluster.evictions_of("evict")[flaky] == 3
    retries = LedgerEntry.objects.filter(plan=plan, kind="eviction.retry").count()
    assert retries == 2


def test_a_budget_spent_by_someone_else_mid_plan_is_finished_by_deleting_the_pod(cluster, planned_request):
    """The plan's budget check passed; then the real eviction meets a 429 from a disruption budget. The
    unit is finished by deleting the pod (UID precondition), not left half-evicted, and the ledger says so."""
    request, plan = planned_request()
    spent = victims_of(plan)[0]
    cluster.real_answers[spent] = [429]
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    assert cluster.evictions_of("evict")[spent] == 1 and cluster.evictions_of("delete") == {spent: 1}
    row = Eviction.objects.get(plan=plan, namespace=spent.split("/")[0], name=spent.split("/")[1])
    assert (
        row.state == EvictionState.EVICTED
        and "UID precondition"
        in LedgerEntry.objects.get(plan=plan, kind="eviction.result", data__pod=spent).message
    )
    note = LedgerEntry.objects.get(plan=plan, kind="budget.spent")
    assert spent in note.message and "spent by someone else" in note.message


def test_a_unit_that_cannot_be_finished_is_reported_loudly(cluster, planned_request):
    request, plan = planned_request()
    stuck = victims_of(plan)[0]
    cluster.always_fail[stuck] = 503
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.FAILED
    request.refresh_from_db()
    unit = Eviction.objects.get(
        plan=plan, namespace=stuck.split("/")[0], name=stuck.split("/")[1]
    ).victim_unit
    assert unit in request.reason
    assert cluster.evictions_of("evict")[stuck] == FAST.attempts
    members = plan.pod_evictions.filter(victim_unit=unit)
    if members.count() > 1:  # other pods of the unit were evicted: the ledger says the unit is split
        partial = LedgerEntry.objects.get(plan=plan, kind="unit.partial")
        assert "PARTLY EVICTED" in partial.message and stuck in partial.message


def test_executing_twice_never_evicts_twice(cluster, planned_request):
    request, _plan = planned_request()
    first = execute(request.pk, cluster, retry=FAST)
    second = execute(request.pk, cluster, retry=FAST)
    assert (first.state, second.state) == (RequestState.SUCCEEDED, "skipped")
    assert max(cluster.evictions_of("evict").values()) == 1


def test_resume_rechecks_rows_caught_mid_call_instead_of_re_evicting(cluster, planned_request):
    """A worker died after claiming two rows: one request reached the API server, one did not."""
    request, plan = planned_request()
    ledger.begin_execution(request.pk)
    rows = list(plan.pod_evictions.all())
    assert len(rows) >= 2
    for row in rows:
        ledger.record_dry_run(row.pk, 201, "", ok=True)
    reached, lost = rows[0], rows[1]
    for row in (reached, lost):
        ledger.claim_for_eviction(row.pk)
    cluster.remove_pod(reached.pod)  # its eviction went through before the crash

    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    calls = cluster.evictions_of("evict")
    assert reached.pod not in calls
    assert calls[lost.pod] == 1
    assert cluster.evictions_of("dry_run") == {}  # real evictions had started: no going back to dry runs
    reached.refresh_from_db()
    assert reached.state == EvictionState.EVICTED and reached.attempts == 1
    assert (
        "pod gone"
        in LedgerEntry.objects.filter(plan=plan, kind="eviction.result", data__pod=reached.pod).get().message
    )


def test_a_victim_is_marked_after_its_eviction_and_before_its_deletion(cluster, planned_request, settings):
    """The Eviction API replaces a pod's DisruptionTarget with its own as it evicts: gangweb's mark comes after
    it. A deletion marks nothing, so there the mark comes first, as kube-scheduler's does."""
    order: list[tuple[str, str]] = []
    mark, evict, delete = cluster.mark_disruption_target, cluster.evict, cluster.delete_pod

    def marked(namespace, name, message, *, uid=None):
        assert uid, "a mark names its pod by UID"
        order.append(("mark", f"{namespace}/{name}"))
        return mark(namespace, name, message, uid=uid)

    def evicted(namespace, name, *, uid=None, dry_run=False):
        if not dry_run:
            order.append(("remove", f"{namespace}/{name}"))
        return evict(namespace, name, uid=uid, dry_run=dry_run)

    def deleted(namespace, name, *, uid, dry_run=False):
        if not dry_run:
            order.append(("remove", f"{namespace}/{name}"))
        return delete(namespace, name, uid=uid, dry_run=dry_run)

    cluster.mark_disruption_target, cluster.evict, cluster.delete_pod = marked, evicted, deleted
    request, plan = planned_request()
    assert execute(request.pk, cluster, retry=FAST).state == RequestState.SUCCEEDED
    for victim in victims_of(plan):
        assert [step for step, pod in order if pod == victim] == ["remove", "mark"]

    settings.GANGWEB_PDB_POLICY = "delete"
    order.clear()
    cluster.objects.update(
        {key: obj for key, obj in FakeCluster(small_cluster()).objects.items() if key[0] == "Pod"}
    )
    request, plan = planned_request()
    assert execute(request.pk, cluster, retry=FAST).state == RequestState.SUCCEEDED
    for victim in victims_of(plan):
        assert [step for step, pod in order if pod == victim] == ["mark", "remove"]


def test_every_victim_is_claimed_in_the_ledger_before_the_first_eviction_leaves(cluster, planned_request):
    """The rows go to ``evicting`` together, committed before any call (a crash after it: the successor looks
    at each pod before asking again), so the threads start with their calls."""
    request, plan = planned_request()
    evict = cluster.evict
    states_at_first_call: list[set[str]] = []  # the rows' states as each real call leaves

    def evict_and_look(namespace, name, *, uid=None, dry_run=False):
        if not dry_run:  # each real call: the first ones may be at once, on two threads
            states_at_first_call.append(
                set(Eviction.objects.filter(plan=plan).values_list("state", flat=True))
            )
        return evict(namespace, name, uid=uid, dry_run=dry_run)

    cluster.evict = evict_and_look
    assert execute(request.pk, cluster, retry=FAST).state == RequestState.SUCCEEDED
    assert states_at_first_call[0] == {EvictionState.EVICTING}
    assert {row.attempts for row in plan.pod_evictions.all()} == {1}


def test_a_stale_plan_is_superseded_without_evicting(cluster, planned_request):
    request, plan = planned_request()
    cluster.remove_pod(victims_of(plan)[0])
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUPERSEDED and outcome.replan
    assert cluster.evictions_of("evict") == {} and cluster.evictions_of("dry_run") == {}
    request.refresh_from_db()
    assert "gone" in request.reason


def test_a_gang_placed_meanwhile_needs_no_preemption(cluster, planned_request):
    request, _plan = planned_request()
    for i in range(2):
        cluster.objects[("Pod", f"team-a/train-{i}")]["spec"]["nodeName"] = f"node-{i}"
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUPERSEDED and not outcome.replan
    assert cluster.evictions_of("evict") == {}


def test_an_execution_waits_for_a_node_another_execution_holds(cluster, planned_request, settings):
    request, plan = planned_request()
    node = plan.pod_evictions.first().node
    with locks.hold([locks.node_key(node)]), pytest.raises(locks.LockBusy):
        execute(request.pk, cluster, retry=FAST, lock_wait=0.2)
    assert cluster.evictions_of("evict") == {} and cluster.evictions_of("dry_run") == {}
    assert execute(request.pk, cluster, retry=FAST).state == RequestState.SUCCEEDED


def test_resume_during_the_dry_runs_dry_runs_again_and_keeps_earlier_refusals(cluster, planned_request):
    request, plan = planned_request()
    ledger.begin_execution(request.pk)
    first, _second = list(plan.pod_evictions.all())[:2]
    ledger.record_dry_run(
        first.pk, 429, "Cannot evict pod as it would violate the pod's disruption budget.", ok=False
    )
    # ...the worker died here, before failing the plan. The budget has room again now:
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.FAILED and first.pod in outcome.reason and "429" in outcome.reason
    assert cluster.evictions_of("evict") == {}


def test_resume_during_the_dry_runs_repeats_them_before_evicting(cluster, planned_request):
    request, plan = planned_request()
    ledger.begin_execution(request.pk)
    first = plan.pod_evictions.first()
    ledger.record_dry_run(first.pk, 201, "", ok=True)
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    assert cluster.evictions_of("dry_run") == {
        pod: 1 for pod in victims_of(plan)
    }  # all re-checked at the API
    assert cluster.evictions_of("evict") == {pod: 1 for pod in victims_of(plan)}


def test_a_victim_whose_priority_rose_is_not_evicted(cluster, planned_request):
    request, plan = planned_request()
    victim_group = plan.victims[0]
    group = cluster.objects[("PodGroup", f"{victim_group['namespace']}/{victim_group['name']}")]
    group["spec"]["priority"] = 500
    for pod in victim_group["pods"]:
        cluster.objects[("Pod", pod)]["spec"]["priority"] = 500
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.SUPERSEDED and outcome.replan
    assert "now has priority 500, not lower than the preemptor's 100" in outcome.reason
    assert cluster.evictions_of("evict") == {} and cluster.evictions_of("dry_run") == {}


def test_a_cluster_whose_calls_can_outlast_the_locks_executes_nothing(cluster, planned_request):
    request, _ = planned_request()
    cluster.request_timeout = (
        20.0  # connect + read (scheduler.cluster.BoundedCalls): longer than 2/3 of the 2 s TTL
    )
    outcome = execute(request.pk, cluster, retry=FAST)
    assert outcome.state == RequestState.FAILED
    assert "must exceed 1.5 x the longest API call (20 s)" in outcome.reason
    assert cluster.calls == []
