"""observe mode against the Kubernetes API test server, read through the official client."""

from __future__ import annotations

import pytest

from kubetestserver import TestServerProcess
from scheduler.kube import KubeCluster
from scheduler.preemption import runtime
from scheduler.preemption.models import Plan, PlanSource, PreemptionRequest, RequestState
from scheduler.preemption.tasks import detect_unschedulable_gangs
from tests.scheduler.preemption.builders import small_cluster

pytestmark = pytest.mark.django_db(transaction=True)


def kube_scheduler_preempted(objects: list[dict], victims: list[str]) -> list[dict]:
    """What the API server holds after kube-scheduler preempted ``victims`` for team-a/train."""
    train = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "train")
    for obj in objects:
        if obj["kind"] == "Pod" and f"{obj['metadata']['namespace']}/{obj['metadata']['name']}" in victims:
            obj["status"].setdefault("conditions", []).append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": "default-scheduler: preempting to accommodate a higher priority podgroup",
                    "lastTransitionTime": "2026-11-30T08:05:00Z",
                }
            )
    for victim in victims:
        namespace, name = victim.split("/")
        objects.append(
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": f"{name}.18a1f0c2d3e4", "namespace": namespace},
                "eventTime": "2026-11-30T08:05:00.000000Z",
                "reportingController": "default-scheduler",
                "reportingInstance": "default-scheduler-node-a",
                "action": "Preempting",
                "reason": "Preempted",
                "type": "Normal",
                "note": f"Preempted by podgroup {train['metadata']['uid']} on node cluster",
                "regarding": {"kind": "Pod", "namespace": namespace, "name": name, "apiVersion": "v1"},
                "related": {
                    "kind": "PodGroup",
                    "namespace": "team-a",
                    "name": "train",
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                },
            }
        )
    return objects


def test_observe_mode_records_kube_schedulers_victims_from_a_real_api(tmp_path, settings):
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "observe"}
    settings.CELERY_TASK_ALWAYS_EAGER = True
    victims = ["batch/mid-0", "batch/mid-1"]
    with TestServerProcess(tmp_path / "kubeconfig") as server:
        server.control.load(kube_scheduler_preempted(small_cluster(), victims))
        runtime.set_cluster(KubeCluster.from_kubeconfig(server.kubeconfig))
        try:
            result = detect_unschedulable_gangs.apply().get()
        finally:
            runtime.reset_cluster()
        evictions = [r for r in server.control.requests("/eviction", method="POST")]
    assert sorted(result["observed"]) == victims
    [request] = PreemptionRequest.objects.all()
    assert (request.mode, request.state) == ("observe", RequestState.OBSERVED)
    observed = Plan.objects.get(request=request, source=PlanSource.KUBE_SCHEDULER)
    ours = Plan.objects.get(request=request, source=PlanSource.ENGINE)
    assert observed.evictions == victims
    assert (
        ours.feasible and ours.evictions and ours.evictions != victims
    )  # gangweb would pick the cheaper gang
    assert evictions == []  # observe mode never evicts, not even a dry run


def test_victims_kube_scheduler_already_deleted_keep_their_uid_and_get_no_counterfactual(tmp_path, settings):
    # A real kube-scheduler deletes its victims in the cycle it preempts (tests/realcluster): by the next
    # detection pass only its events name them. gangweb cannot rebuild the state before without them.
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "observe"}
    settings.CELERY_TASK_ALWAYS_EAGER = True
    victims = ["batch/mid-0", "batch/mid-1"]
    objects = kube_scheduler_preempted(small_cluster(), victims)
    for event in (o for o in objects if o["kind"] == "Event"):
        event["regarding"]["uid"] = f"uid-{event['regarding']['name']}"
    objects = [
        o
        for o in objects
        if not (o["kind"] == "Pod" and f"{o['metadata']['namespace']}/{o['metadata']['name']}" in victims)
    ]
    for pod in (o for o in objects if o["kind"] == "Pod" and o["metadata"]["namespace"] == "team-a"):
        pod["spec"]["nodeName"] = "node-2"  # the gang placed in the room they left
        pod["status"] = {"phase": "Running"}
    with TestServerProcess(tmp_path / "kubeconfig") as server:
        server.control.load(objects)
        runtime.set_cluster(KubeCluster.from_kubeconfig(server.kubeconfig))
        try:
            result = detect_unschedulable_gangs.apply().get()
        finally:
            runtime.reset_cluster()
    assert sorted(result["observed"]) == victims and result["opened"] == []
    [request] = PreemptionRequest.objects.all()
    assert (request.mode, request.state) == ("observe", RequestState.OBSERVED)
    assert "deleted before gangweb read them" in request.reason, request.reason
    observed = Plan.objects.get(request=request, source=PlanSource.KUBE_SCHEDULER)
    assert sorted(e.pod_uid for e in observed.pod_evictions.all()) == ["uid-mid-0", "uid-mid-1"]
    assert not Plan.objects.filter(request=request, source=PlanSource.ENGINE).exists()
