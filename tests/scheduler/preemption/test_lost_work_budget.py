"""The lost-work budget in the pipeline (docs/pipeline.md "The lost-work budget"): what one plan's
evictions lost this hour is what the next plan may not take again, and the gang that would overdraw it
waits with a verdict that says so. PostgreSQL, the Celery tasks run eagerly through apply_async."""

from __future__ import annotations

import pytest

from kubetestserver import KubeTestServer
from scheduler.cluster import WatchCache, object_key
from scheduler.engine import parse_snapshot
from scheduler.engine.outcomes import Outcome
from scheduler.kube import KubeCluster
from scheduler.preemption import ledger, lostwork, planning
from scheduler.preemption.models import Plan, RequestState
from scheduler.preemption.tasks import plan_request
from tests.scheduler.preemption.builders import T1, pod, podgroup, small_cluster

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def in_process_tasks(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_LOCK_TTL_SECONDS = 2


def _second_gang(cluster):
    for obj in [
        podgroup("team-b", "tune", min_count=2, priority=100, unschedulable=True),
        pod("team-b", "tune-0", group="tune", priority=100, created=T1),
        pod("team-b", "tune-1", group="tune", priority=100, created=T1),
    ]:
        cluster.objects[(obj["kind"], f"{obj['metadata']['namespace']}/{obj['metadata']['name']}")] = obj


def _run(namespace, name):
    request, _ = ledger.open_request(namespace, name, mode="enforce", trigger="test")
    plan_request.apply(args=[request.pk]).get()
    request.refresh_from_db()
    return request, Plan.objects.filter(request=request).first()


def test_a_gang_waits_when_its_plan_would_overdraw_the_namespace_budget(cluster, settings):
    """batch's victims ran an hour on 8 GPUs each, checkpointing never: 8 GPU-hours per pod."""
    settings.GANGWEB_LOST_WORK_BUDGET_GPU_HOURS = 20.0
    _second_gang(cluster)

    first, first_plan = _run("team-a", "train")
    assert first.state == RequestState.SUCCEEDED, first.reason
    # The first plan took the low gang: 2 pods x 8 GPUs x 1 hour, within the 20 GPU-hours.
    assert first_plan.lost_gpu_seconds == 16 * 3600
    assert lostwork.lost_by_namespace(first_plan.created_at.replace(year=2000)) == {"batch": 16 * 3600}

    # What is left (4 GPU-hours) would be overdrawn by both mid pods (16): the gang waits and says why.
    second, second_plan = _run("team-b", "tune")
    assert second.state == RequestState.INFEASIBLE
    assert second_plan.outcome == Outcome.LOST_WORK_BUDGET == "infeasible:lost-work-budget"
    assert second_plan.evictions == []
    assert set(cluster.evictions_of("evict")) == {"batch/low-0", "batch/low-1"}  # the first plan's only
    assert "waits for the lost-work budget" in second_plan.reason
    assert "batch/lost-work-budget (16.00 GPU-h wanted, 4.00 left)" in second_plan.reason


def test_a_namespace_override_and_a_silent_workload_s_assumed_interval(cluster, settings):
    """Assumed to save every 40 minutes, the low gang loses the last 20 of its hour: 16 GPUs x 20 min is
    5.3 GPU-hours, within batch's own budget of 6, which stands in for the default of 1."""
    settings.GANGWEB_LOST_WORK_BUDGET_GPU_HOURS = 1.0
    settings.GANGWEB_NAMESPACE_LOST_WORK_BUDGETS = {"batch": 6.0}
    settings.GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS = {"batch": 2400.0}
    first, first_plan = _run("team-a", "train")
    assert first.state == RequestState.SUCCEEDED, first.reason
    assert first_plan.lost_gpu_seconds == 16 * 1200
    assert [v["lostGpuSeconds"] for v in first_plan.victims] == [16 * 1200]
    assert lostwork.allowance().left("batch/lost-work-budget") == 6 * 3600 - 16 * 1200


def in_volcano_queue(objects, namespace, gang, queue="q1"):
    """``objects`` with ``gang``'s pods in Volcano's ``queue`` (a Volcano PodGroup they name), as Volcano's
    admission puts them."""
    for obj in objects:
        group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if obj["kind"] == "Pod" and obj["metadata"]["namespace"] == namespace and group == gang:
            obj["metadata"].setdefault("annotations", {})["scheduling.k8s.io/group-name"] = f"{gang}-vc"
    return [
        *objects,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": queue},
            "spec": {"weight": 1},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"namespace": namespace, "name": f"{gang}-vc"},
            "spec": {"queue": queue, "minMember": 1},
            "status": {"phase": "Running"},
        },
    ]


def _in_volcano_queue(cluster, namespace, gang):
    cluster.objects = {
        (o["kind"], object_key(o)): o for o in in_volcano_queue(cluster.snapshot_objects(), namespace, gang)
    }


def _queues(cluster):
    objects = cluster.snapshot_objects()
    return lostwork.queues(objects, parse_snapshot(objects))


def test_a_queue_budget_caps_the_victims_in_its_queue_only(cluster, settings):
    """volcano/q1 may lose nothing this hour: the low gang in it is spared and the mid pods outside it,
    dearer by priority, make the room instead."""
    settings.GANGWEB_QUEUE_VICTIMS = frozenset({"volcano"})
    settings.GANGWEB_QUEUE_LOST_WORK_BUDGETS = {"volcano/q1": 0.0}
    _in_volcano_queue(cluster, "batch", "low")

    first, first_plan = _run("team-a", "train")
    assert first.state == RequestState.SUCCEEDED, first.reason
    assert set(cluster.evictions_of("evict")) == {"batch/mid-0", "batch/mid-1"}
    assert [(v["kind"], v["name"]) for v in first_plan.victims] == [("Pod", "mid-0"), ("Pod", "mid-1")]


def test_a_queue_s_lost_work_this_hour_is_what_its_next_plan_may_not_take(cluster, settings):
    """Both batch gangs run in volcano/q1, capped at 20 GPU-hours: the low gang's eviction takes 16 of them
    and its pods, recreated by their job, still name the queue; the mid pods (8 each) would overdraw the 4
    left, so team-b's gang waits and its verdict names the queue."""
    settings.GANGWEB_QUEUE_VICTIMS = frozenset({"volcano"})
    settings.GANGWEB_QUEUE_LOST_WORK_BUDGETS = {"volcano/q1": 20.0}
    _in_volcano_queue(cluster, "batch", "low")
    _in_volcano_queue(cluster, "batch", "mid")
    _second_gang(cluster)

    first, first_plan = _run("team-a", "train")
    assert first.state == RequestState.SUCCEEDED, first.reason
    assert first_plan.lost_gpu_seconds == 16 * 3600
    since = first_plan.created_at.replace(year=2000)
    # Its pods gone, the low gang is in no queue any more: its loss counts for batch only.
    assert lostwork.lost_by_queue(since, _queues(cluster).gangs) == {}
    for i in range(2):  # the job controller recreates the evicted pods: pending, in the same gang and queue
        recreated = pod("batch", f"low-{i}", group="low", priority=10, created=T1)
        recreated["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "low-vc"}
        cluster.objects[("Pod", f"batch/low-{i}")] = recreated
    assert lostwork.lost_by_queue(since, _queues(cluster).gangs) == {"volcano/q1": 16 * 3600}

    second, second_plan = _run("team-b", "tune")
    assert second.state == RequestState.INFEASIBLE, second.reason
    assert second_plan.outcome == Outcome.LOST_WORK_BUDGET
    assert second_plan.evictions == []
    assert "queue volcano/q1 (16.00 GPU-h wanted, 4.00 left)" in second_plan.reason


def test_a_queue_budget_holds_on_the_watch_cache_s_live_snapshot(settings, tmp_path):
    """The same cap as above, planned on a started watch cache of the API test server: the queue of each
    pod comes from the Volcano objects it watches."""
    settings.GANGWEB_QUEUE_VICTIMS = frozenset({"volcano"})
    settings.GANGWEB_QUEUE_LOST_WORK_BUDGETS = {"volcano/q1": 0.0}
    with KubeTestServer() as server:
        server.load(in_volcano_queue(small_cluster(), "batch", "low"))
        kube = KubeCluster.from_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig"))
        kube.start()
        try:
            view = planning.current_view(kube, "team-a/train")
            result = planning.compute(view, "team-a/train", "gangweb")
        finally:
            kube.close()
    assert isinstance(kube, WatchCache)
    assert sorted(result.plan["evictions"]) == ["batch/mid-0", "batch/mid-1"]
    assert view.snapshot.allowance.queue_of == {"batch/low-0": "volcano/q1", "batch/low-1": "volcano/q1"}
