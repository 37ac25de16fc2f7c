"""The demo's scripted scene (``scheduler/simulation/scene.py``) through the real pipeline, on the demo's
simulated cluster: the high-priority gang arrives, gangweb plans and evicts lower-priority gangs, and
the gang's pods then fill the freed GPUs. Simulated time only: each step is a ``tick()``, no sleeps."""

from __future__ import annotations

import pytest

from scheduler.preemption import runtime
from scheduler.preemption.models import Plan, PreemptionRequest, RequestState
from scheduler.preemption.tasks import detect_unschedulable_gangs
from scheduler.simulation import SimulatedCluster, SteppedClock, scene

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pipeline(settings):
    """The demo's pipeline: enforce mode, every task inline."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_MODE = "enforce"
    yield
    runtime.reset_cluster()


@pytest.mark.parametrize("nodes, seed", [(64, 7), (16, 7), (64, 3)])
@pytest.mark.usefixtures("pipeline")
def test_the_scene_ends_in_an_executed_preemption_and_a_placed_gang(nodes, seed):
    cluster = SimulatedCluster(nodes, seed, clock=SteppedClock())
    runtime.set_cluster(cluster)
    for _ in range(10):  # the demo stages it 20 s in: ten 2-s ticks
        cluster.tick()
    gang = scene.stage(cluster)
    assert gang is not None and gang.tier.priority_class == "inference-critical"
    assert scene.stage(cluster) is None, "staged once"
    cluster.tick()  # the binder cannot place it: Unschedulable
    assert not any(p.node for p in cluster._gang_pods(gang.key))

    detect_unschedulable_gangs.apply().get()

    [request] = PreemptionRequest.objects.filter(namespace=gang.namespace, name=gang.name)
    plan = Plan.objects.get(request=request)
    assert plan.evictions, request.reason
    for _ in range(3):
        cluster.tick()
    request.refresh_from_db()
    assert request.state in (RequestState.EXECUTING, RequestState.SUCCEEDED), request.reason
    placed = [
        p
        for p in cluster.snapshot_objects()
        if p["kind"] == "Pod" and p["metadata"]["name"].startswith(gang.name + "-")
    ]
    assert len(placed) == gang.size and all(p["spec"].get("nodeName") for p in placed)
    racks = {p["spec"]["nodeName"].rpartition("-")[0] for p in placed}
    assert len(racks) == 1, "in one rack, as it asked"
