"""The Celery tasks end to end in one process: detect -> plan -> execute, observe mode, recovery, metrics."""

from __future__ import annotations

import copy

import pytest

from scheduler.engine import parse_snapshot
from scheduler.engine import plan as engine_plan
from scheduler.preemption import ledger
from scheduler.preemption.metrics import REGISTRY
from scheduler.preemption.models import (
    Eviction,
    EvictionState,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)
from scheduler.preemption.observe import record_observations
from scheduler.preemption.tasks import detect_unschedulable_gangs, recover_requests
from tests.scheduler.preemption.builders import T0, small_cluster

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def in_process_tasks(settings):
    """Run follow-up tasks eagerly (no broker needed); the chain still goes through apply_async.

    Celery reads its configuration from Django's settings object on each access, so the ``settings``
    fixture is the way to change it for one test."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_LOCK_TTL_SECONDS = 2


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_detection_opens_one_request_per_gang_and_drives_it_to_success(cluster, published):
    attempts_before = sample("gangweb_podgroup_preemption_attempts_total", result="succeeded")
    gpus_before = sample("gangweb_podgroup_preemption_evicted_gpus_total")
    lost_before = sample("gangweb_podgroup_preemption_lost_gpu_seconds_total")
    plans_before = sample("gangweb_podgroup_preemption_plan_duration_seconds_count")
    victims_before = sample("gangweb_podgroup_preemption_victims_sum")

    first = detect_unschedulable_gangs.apply().get()
    second = detect_unschedulable_gangs.apply().get()

    [request] = PreemptionRequest.objects.all()
    assert first["opened"] == [request.pk] and second["opened"] == []
    assert request.state == RequestState.SUCCEEDED, request.reason
    plan = Plan.objects.get(request=request)
    assert sorted(cluster.evictions_of("evict")) == sorted(plan.evictions)
    assert sample("gangweb_podgroup_preemption_attempts_total", result="succeeded") == attempts_before + 1
    assert sample("gangweb_podgroup_preemption_evicted_gpus_total") == gpus_before + plan.evicted_gpus
    # The victims had run for the hour between their start and the preemptor's arrival.
    assert plan.lost_gpu_seconds == plan.evicted_gpus * 3600
    assert sample("gangweb_podgroup_preemption_lost_gpu_seconds_total") == lost_before + plan.lost_gpu_seconds
    assert sample("gangweb_podgroup_preemption_plan_duration_seconds_count") == plans_before + 1
    assert sample("gangweb_podgroup_preemption_victims_sum") == victims_before + plan.victim_units
    kinds = [name for name, _ in published]
    assert kinds[0] == "request.opened" and "plan.created" in kinds and kinds[-1] == "gang.placed"


def test_observe_mode_plans_but_never_evicts(cluster, settings):
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "observe"}
    detect_unschedulable_gangs.apply().get()
    [request] = PreemptionRequest.objects.all()
    assert (request.mode, request.state) == ("observe", RequestState.OBSERVED)
    assert Plan.objects.get(request=request).feasible
    assert cluster.calls == []


def preempted_by_kube_scheduler(objects: list[dict], victims: list[str]) -> list[dict]:
    """The same cluster moments after kube-scheduler preempted ``victims`` for team-a/train."""
    objects = copy.deepcopy(objects)
    train_uid = next(
        o["metadata"]["uid"] for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "train"
    )
    for obj in objects:
        if obj["kind"] == "Pod" and f"{obj['metadata']['namespace']}/{obj['metadata']['name']}" in victims:
            obj["metadata"]["deletionTimestamp"] = T0
            obj["status"].setdefault("conditions", []).append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": "default-scheduler: preempting to accommodate a higher priority podgroup",
                }
            )
    for i, victim in enumerate(victims):
        namespace, name = victim.split("/")
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{name}.preempted", "namespace": namespace},
                "involvedObject": {"kind": "Pod", "namespace": namespace, "name": name},
                "related": {"kind": "PodGroup", "namespace": "team-a", "name": "train"} if i == 0 else None,
                "reason": "Preempted",
                "type": "Normal",
                "message": f"Preempted by podgroup {train_uid} on node cluster",
            }
        )
    return objects


def test_observed_preemptions_are_recorded_beside_gangwebs_own_plan(settings):
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "observe"}
    before = small_cluster()
    # kube-scheduler chose the two `single` pods of batch/mid (priority 20), where gangweb takes batch/low.
    after = preempted_by_kube_scheduler(before, ["batch/mid-0", "batch/mid-1"])

    assert sorted(record_observations(after)) == ["batch/mid-0", "batch/mid-1"]
    assert record_observations(after) == []  # seen once, recorded once

    [request] = PreemptionRequest.objects.all()
    assert (request.mode, request.state) == ("observe", RequestState.OBSERVED)
    observed = Plan.objects.get(request=request, source=PlanSource.KUBE_SCHEDULER)
    ours = Plan.objects.get(request=request, source=PlanSource.ENGINE)
    assert observed.evictions == ["batch/mid-0", "batch/mid-1"] and observed.evicted_gpus == 16
    assert set(Eviction.objects.filter(plan=observed).values_list("state", flat=True)) == {
        EvictionState.EVICTED
    }
    reference = engine_plan(parse_snapshot(before), "team-a/train", "gangweb").to_dict()
    assert ours.evictions == reference["evictions"]  # planned on the state before the preemption


def test_recovery_resumes_an_execution_whose_worker_vanished(cluster, planned_request):
    request, _plan = planned_request()
    ledger.begin_execution(request.pk)  # a worker started, then died before doing anything
    result = recover_requests.apply().get()
    assert result["resumed"] == [request.pk]
    request.refresh_from_db()
    assert request.state == RequestState.SUCCEEDED, request.reason
    assert max(cluster.evictions_of("evict").values()) == 1


def test_a_stale_plan_is_replanned_as_a_new_request(cluster, planned_request):
    from scheduler.preemption.tasks import execute_plan

    request, plan = planned_request()
    cluster.remove_pod(sorted(plan.evictions)[0])
    execute_plan.apply(args=[request.pk]).get()
    request.refresh_from_db()
    assert request.state == RequestState.SUPERSEDED
    fresh = PreemptionRequest.objects.exclude(pk=request.pk).get()
    assert fresh.trigger.startswith("re-plan:") and fresh.state in (
        RequestState.SUCCEEDED,
        RequestState.INFEASIBLE,
    )


class UnreachableCluster:
    name = "unreachable"

    def snapshot_objects(self):
        from scheduler.cluster import ClusterError

        raise ClusterError("listing pods: connection refused", code=0)


def test_detection_reports_an_unreachable_cluster_in_one_line():
    from scheduler.preemption import runtime

    runtime.set_cluster(UnreachableCluster())
    try:
        result = detect_unschedulable_gangs.apply().get()
    finally:
        runtime.reset_cluster()
    assert result == {"opened": [], "observed": [], "error": "listing pods: connection refused"}
    assert not PreemptionRequest.objects.exists()


def test_a_gang_deleted_before_planning_fails_at_once_with_the_reason(cluster):
    from scheduler.preemption.tasks import plan_request

    request, _ = ledger.open_request("team-a", "gone", mode="enforce", trigger="test")
    plan_request.apply(args=[request.pk]).get()
    request.refresh_from_db()
    assert request.state == RequestState.FAILED
    assert request.reason == "cannot plan: PodGroup team-a/gone not found in the snapshot"


def test_room_freed_for_one_gang_is_not_given_to_the_next(cluster):
    """Two gangs wait for the same room; the first gets it, the second must find its own."""
    from scheduler.preemption.tasks import plan_request
    from tests.scheduler.preemption.builders import T1, pod, podgroup

    for obj in [
        podgroup("team-b", "tune", min_count=2, priority=100, unschedulable=True),
        pod("team-b", "tune-0", group="tune", priority=100, created=T1),
        pod("team-b", "tune-1", group="tune", priority=100, created=T1),
    ]:
        cluster.objects[(obj["kind"], f"{obj['metadata']['namespace']}/{obj['metadata']['name']}")] = obj

    first, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="test")
    plan_request.apply(args=[first.pk]).get()
    first.refresh_from_db()
    assert first.state == RequestState.SUCCEEDED, first.reason
    freed = set(Plan.objects.get(request=first).placement.values())

    # team-a's pods still wait for kube-scheduler to bind them into the freed nodes.
    second, _ = ledger.open_request("team-b", "tune", mode="enforce", trigger="test")
    plan_request.apply(args=[second.pk]).get()
    second.refresh_from_db()
    plan = Plan.objects.get(request=second)
    assert not freed & set(plan.placement.values()), "the second gang was planned into the first one's room"
    assert second.state == RequestState.SUCCEEDED and plan.evictions, second.reason


def test_an_execution_that_must_wait_for_a_node_says_so_and_retries(cluster, planned_request):
    from scheduler.preemption import locks
    from scheduler.preemption.models import LedgerEntry
    from scheduler.preemption.tasks import execute_plan

    request, plan = planned_request()
    with locks.hold([locks.node_key(plan.pod_evictions.first().node)]), pytest.raises(locks.LockBusy):
        execute_plan(request.pk)  # called directly, Celery re-raises instead of scheduling the retry
    waiting = LedgerEntry.objects.get(request=request, kind="execution.waiting")
    assert "locked by another execution" in waiting.message
    assert cluster.calls == []
    execute_plan(request.pk)
    request.refresh_from_db()
    assert request.state == RequestState.SUCCEEDED
