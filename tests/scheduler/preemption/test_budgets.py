"""Disruption budgets and whole plans, on the Kubernetes API test server (it spends budgets as the real
API server does: dry runs check without spending, real evictions spend one each).

The victims are the two pods of the ``all`` gang batch/low; a third pod, batch/low-spare, sits under the
same budget (``minAvailable: 1``: two disruptions allowed while all three run; an integer, since the real
disruption controller counts no pods without a controller for ``maxUnavailable``).
"""

from __future__ import annotations

import pytest

from kubetestserver import KubeTestServer
from scheduler.kube import KubeCluster
from scheduler.kube.resources import PDBS, PODS
from scheduler.preemption import execution as execution_module
from scheduler.preemption import ledger, planning, tasks
from scheduler.preemption.execution import execute
from scheduler.preemption.execution.budgets import shortfalls
from scheduler.preemption.execution.evictor import RetryPolicy
from scheduler.preemption.models import EvictionState, LedgerEntry, RequestState
from tests.scheduler.preemption.builders import FakeCluster, pod, small_cluster

pytestmark = pytest.mark.django_db(transaction=True)

FAST = RetryPolicy(attempts=3, first_delay=0.01, max_delay=0.02)
VICTIMS = ["batch/low-0", "batch/low-1"]


def budgeted_cluster(allowed: int = 2) -> list[dict]:
    objects = small_cluster()
    objects.append(pod("batch", "low-spare", group=None, priority=10, gpus=0, node_name="node-2"))
    for obj in objects:
        if obj["kind"] == "Pod" and obj["status"]["phase"] == "Running":
            obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            if obj["metadata"]["name"].startswith("low"):
                obj["metadata"]["labels"] = {"app": "low"}
    objects.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "low-pdb", "namespace": "batch"},
            "spec": {"minAvailable": 3 - allowed, "selector": {"matchLabels": {"app": "low"}}},
        }
    )
    return objects


@pytest.fixture(autouse=True)
def short_locks(settings):
    settings.GANGWEB_LOCK_TTL_SECONDS = 20


@pytest.fixture
def server():
    with KubeTestServer() as srv:
        srv.load(budgeted_cluster())
        yield srv


@pytest.fixture
def kube(server, tmp_path):
    cluster = KubeCluster.from_kubeconfig(
        server.write_kubeconfig(tmp_path / "kubeconfig"), timeout=(2.0, 5.0)
    )
    yield cluster
    cluster.close()


def plan_for(cluster):
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="budget test")
    ledger.begin_planning(request.pk)
    result = planning.compute(planning.fresh_objects(cluster), request.podgroup, "gangweb")
    plan = ledger.record_plan(request.pk, result.plan, cost=result.cost, pods=result.pods)
    assert sorted(plan.evictions) == VICTIMS and plan.pdb_violations == 0
    return request, plan


def real_evictions(server, pod_key: str) -> list[int]:
    namespace, name = pod_key.split("/")
    return [
        r["code"]
        for r in server.requests(f"/namespaces/{namespace}/pods/{name}/eviction", "POST")
        if "dryRun" not in (r["query"] or "")
    ]


def test_the_budget_check_counts_every_victim_under_one_budget(server):
    objects = server.store.dump()
    assert shortfalls(objects, VICTIMS) == []
    server.store.mutate(
        PDBS,
        "batch",
        "low-pdb",
        lambda o: o["status"].__setitem__("disruptionsAllowed", 1),
        subresource="status",
    )
    (short,) = shortfalls(server.store.dump(), VICTIMS)
    assert (short.budget, short.needed, short.allowed, short.pods) == ("batch/low-pdb", 2, 1, tuple(VICTIMS))
    assert str(short) == (
        "PodDisruptionBudget batch/low-pdb allows 1 disruption(s) now; the plan needs 2 "
        "(batch/low-0, batch/low-1)"
    )


def test_a_plan_the_budget_no_longer_allows_evicts_nothing_and_names_the_budget(server, kube):
    """Someone spends one of the two disruptions after planning. Each dry run would still pass (they do
    not spend), and the second real eviction would meet a 429: on c964fd5 the unit was left half-evicted."""
    request, plan = plan_for(kube)
    assert kube.evict("batch", "low-spare").code == 201  # another actor, between planning and execution
    outcome = execute(request.pk, kube, retry=FAST)
    assert outcome.state == RequestState.FAILED
    assert "PodDisruptionBudget batch/low-pdb allows 1 disruption(s) now; the plan needs 2" in outcome.reason
    assert "nothing evicted" in outcome.reason
    assert all(real_evictions(server, v) == [] for v in VICTIMS)
    assert all(server.store.try_get(PODS, *v.split("/")) is not None for v in VICTIMS)
    assert set(plan.pod_evictions.values_list("state", flat=True)) == {EvictionState.FAILED}


def test_a_budget_spent_between_the_check_and_the_evictions_finishes_the_unit_by_deletion(
    server, kube, monkeypatch
):
    request, plan = plan_for(kube)

    def check_then_someone_spends(objects, victims):
        found = shortfalls(objects, victims)
        assert found == []  # the check passes...
        assert kube.evict("batch", "low-spare").code == 201  # ...and then the budget is spent elsewhere
        return found

    monkeypatch.setattr(execution_module, "shortfalls", check_then_someone_spends)
    outcome = execute(request.pk, kube, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    assert all(server.store.try_get(PODS, *v.split("/")) is None for v in VICTIMS), "the unit is whole"
    answers = sorted(code for v in VICTIMS for code in real_evictions(server, v))
    assert answers == [201, 429]  # one eviction spent the last disruption, the other met the empty budget
    (deletion,) = [
        r for v in VICTIMS for r in server.requests(f"/namespaces/batch/pods/{v.split('/')[1]}", "DELETE")
    ]
    assert deletion["code"] == 200
    note = LedgerEntry.objects.get(plan=plan, kind="budget.spent")
    assert "spent by someone else" in note.message and "UID precondition" in note.message


def test_enforce_mode_does_not_execute_a_plan_that_breaks_a_budget(settings):
    """GANGWEB_PDB_POLICY=respect (the default): the best plan breaking a budget means every plan found
    does; the request ends infeasible and saying so, and nothing is called."""
    objects = budgeted_cluster(allowed=0)
    for obj in objects:  # one budget over every batch pod, allowing nothing: no plan can respect it
        if obj["kind"] == "PodDisruptionBudget":
            obj["status"] = {
                "disruptionsAllowed": 0,
                "currentHealthy": 5,
                "desiredHealthy": 5,
                "expectedPods": 5,
            }
        elif obj["kind"] == "Pod" and obj["metadata"]["namespace"] == "batch":
            obj["metadata"]["labels"] = {"app": "low"}
    fake = FakeCluster(objects)
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="budget test")
    ledger.begin_planning(request.pk)
    result = planning.compute(fake.snapshot_objects(), request.podgroup, "gangweb")
    assert result.cost["pdb_violations"] > 0, "the scenario needs a plan that breaks the budget"
    tasks.after_plan(request.pk, result, planned_by="single")
    request.refresh_from_db()
    assert request.state == RequestState.INFEASIBLE
    assert "breaks a disruption budget" in request.reason and "GANGWEB_PDB_POLICY" in request.reason
    assert fake.calls == []


def test_delete_policy_removes_victims_like_kube_scheduler(server, kube, settings):
    """GANGWEB_PDB_POLICY=delete: victims are deleted (dry run first), with their UIDs, budgets unasked."""
    settings.GANGWEB_PDB_POLICY = "delete"
    request, _plan = plan_for(kube)
    assert kube.evict("batch", "low-spare").code == 201  # the budget now allows one disruption only
    outcome = execute(request.pk, kube, retry=FAST)
    assert outcome.state == RequestState.SUCCEEDED, outcome.reason
    assert all(server.store.try_get(PODS, *v.split("/")) is None for v in VICTIMS)
    assert all(real_evictions(server, v) == [] for v in VICTIMS)
    deletes = [
        r for v in VICTIMS for r in server.requests(f"/namespaces/batch/pods/{v.split('/')[1]}", "DELETE")
    ]
    assert sorted("dryRun" in (r["query"] or "") for r in deletes) == [False, False, True, True]
