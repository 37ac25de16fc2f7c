"""The re-check on a started watch cache: fresh GETs by name, then the engine's check on the plan's nodes only
(``LiveSnapshot.local``), against the Kubernetes API test server.

small_cluster: the preemptor team-a/train (2 x 8 GPUs) is planned onto node-0/1 in place of the ``all`` gang
batch/low.
"""

from __future__ import annotations

import pytest

from kubetestserver import KubeTestServer
from scheduler.kube import KubeCluster
from scheduler.kube.resources import PODS, SNAPSHOT_RESOURCES
from scheduler.preemption import ledger, planning
from scheduler.preemption.execution import execute
from scheduler.preemption.execution.evictor import RetryPolicy
from scheduler.preemption.models import LedgerEntry, RequestState
from tests.scheduler.preemption.builders import pod, small_cluster
from tests.scheduler.preemption.test_budgets import budgeted_cluster

pytestmark = pytest.mark.django_db(transaction=True)

FAST = RetryPolicy(attempts=3, first_delay=0.01, max_delay=0.02)
VICTIMS = ["batch/low-0", "batch/low-1"]


@pytest.fixture(autouse=True)
def short_locks(settings):
    settings.GANGWEB_LOCK_TTL_SECONDS = 20


@pytest.fixture
def server():
    with KubeTestServer(bookmark_interval=0.2) as srv:
        srv.load(small_cluster())
        yield srv


@pytest.fixture
def kube(server, tmp_path):
    cluster = KubeCluster.from_kubeconfig(
        server.write_kubeconfig(tmp_path / "kubeconfig"), timeout=(2.0, 5.0)
    )
    cluster.start()
    yield cluster
    cluster.close()


def plan_on_cache(cluster):
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="re-check test")
    ledger.begin_planning(request.pk)
    result = planning.compute(planning.current_view(cluster, request.podgroup), request.podgroup, "gangweb")
    plan = ledger.record_plan(request.pk, result.plan, cost=result.cost, pods=result.pods)
    assert sorted(plan.evictions) == VICTIMS
    assert sorted(plan.placement.values()) == ["node-0", "node-1"]
    return request, plan


def eviction_calls(server) -> list[dict]:
    return [r for r in server.requests(method="POST") if r["path"].endswith("/eviction")]


def test_a_plan_that_still_holds_is_dry_run_then_evicted_once(server, kube):
    request, _ = plan_on_cache(kube)
    outcome = execute(request.pk, kube, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    assert LedgerEntry.objects.get(request=request, kind="execution.recheck").data["ok"] is True
    calls = eviction_calls(server)
    dry = [c for c in calls if "dryRun" in (c["query"] or "")]
    real = [c for c in calls if "dryRun" not in (c["query"] or "")]
    assert len(dry) == len(real) == 2 and all(c["code"] == 201 for c in real)
    assert max(c["time"] for c in dry) <= min(c["time"] for c in real)  # every dry run before any eviction
    assert all(server.store.try_get(PODS, *v.split("/")) is None for v in VICTIMS)


def test_a_pod_bound_into_the_planned_room_after_planning_supersedes_the_plan_without_a_call(server, kube):
    request, _ = plan_on_cache(kube)
    # Another scheduler binds a pod the gang cannot evict (higher priority) onto a planned node.
    server.store.create(PODS, pod("other", "vip", group=None, priority=1000, gpus=8, node_name="node-0"))
    assert kube.wait_for(lambda objs: any(o["metadata"]["name"] == "vip" for o in objs), timeout=30)
    outcome = execute(request.pk, kube, retry=FAST)
    assert outcome.state == RequestState.SUPERSEDED and outcome.replan, outcome.reason
    assert "nothing evicted" in outcome.reason
    assert eviction_calls(server) == []  # not even a dry run
    assert all(server.store.try_get(PODS, *v.split("/")) is not None for v in VICTIMS)


def test_the_re_check_does_not_wait_for_a_bookmark_of_the_budgets_watch(tmp_path):
    """The budgets' LIST answers with the store's newest resourceVersion; the cache catches up to the budgets
    read, not to that (which the budgets' watch reaches only at their next change or bookmark: on 3607a07
    every re-check waited for one, and without one in 30 s the execution failed and retried)."""
    with KubeTestServer(bookmark_interval=3600) as server:
        server.load(budgeted_cluster())
        cluster = KubeCluster.from_kubeconfig(server.write_kubeconfig(tmp_path / "kc"), timeout=(2.0, 5.0))
        cluster.start()
        try:
            server.store.create(PODS, pod("other", "unrelated", group=None, priority=1, gpus=0))  # newer rv
            assert cluster.wait_for(lambda objs: any(o["metadata"]["name"] == "unrelated" for o in objs))
            request, _ = plan_on_cache(cluster)
            outcome = execute(request.pk, cluster, retry=FAST)
        finally:
            cluster.close()
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    recheck = LedgerEntry.objects.get(request=request, kind="execution.recheck")
    assert recheck.data["ok"] is True


def test_room_freed_for_one_gang_is_not_given_to_the_next_on_the_live_snapshot(server, kube):
    """The live snapshot's reservations: team-a's pods wait for kube-scheduler on the nodes gangweb freed for
    them, and team-b, planned on the watch cache meanwhile, must find its own room."""
    from scheduler.preemption.models import Plan
    from tests.scheduler.preemption.builders import T1, podgroup

    request, plan = plan_on_cache(kube)
    assert execute(request.pk, kube, retry=FAST).state == RequestState.SUCCEEDED
    freed = set(plan.placement.values())
    for obj in [
        podgroup("team-b", "tune", min_count=2, priority=100, unschedulable=True),
        pod("team-b", "tune-0", group="tune", priority=100, created=T1),
        pod("team-b", "tune-1", group="tune", priority=100, created=T1),
    ]:
        server.store.create(next(r for r in SNAPSHOT_RESOURCES if r.kind == obj["kind"]), obj)
    assert kube.wait_for(
        lambda objs: (
            {o["metadata"]["name"] for o in objs if o["kind"] == "Pod"} >= {"tune-0", "tune-1"}
            and not any(f"{o['metadata'].get('namespace')}/{o['metadata']['name']}" in VICTIMS for o in objs)
        ),
        timeout=30,
    )
    second, _ = ledger.open_request("team-b", "tune", mode="enforce", trigger="re-check test")
    ledger.begin_planning(second.pk)
    view = planning.current_view(kube, second.podgroup)
    assert {
        view.snapshot.pods[view.snapshot.pod_index[k]].node_name for k in ("team-a/train-0", "team-a/train-1")
    } == freed
    result = planning.compute(view, second.podgroup, "gangweb")
    stored = ledger.record_plan(second.pk, result.plan, cost=result.cost, pods=result.pods)
    assert stored.placement and not freed & set(stored.placement.values()), stored.placement
    assert Plan.objects.get(request=second).evictions, "team-b found room by preempting elsewhere"
