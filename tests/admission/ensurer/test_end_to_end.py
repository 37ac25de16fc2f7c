"""A controller's pod through the real pieces: the mutating webhook names its gang, the pod is created at the
local Kubernetes API test server through the official client, the Celery task ensures the PodGroup.

Owners (Job, JobSet, PyTorchJob, RayCluster, Volcano/coscheduling/KAI PodGroups) are created through the
official client too, and the server checks every built-in object against the 1.37 schemas (strict).
"""

from __future__ import annotations

import base64
import json

import jsonpatch
import pytest
from django.test import Client
from kubernetes import client, config
from kubernetes_validate.utils import validate as schema_validate

from admission.tasks import ensure_podgroups
from kubetestserver import KubeTestServer
from scheduler.kube import KubeCluster
from scheduler.kube.resources import resource_named
from scheduler.preemption import runtime
from scheduler.preemption.models import LedgerEntry
from scheduler.simulation import SimulatedCluster
from tests.admission.support import (
    EXPECTED,
    POD_FIXTURES,
    load_owner,
    load_pod,
    priority_classes,
    review_bytes,
)

pytestmark = pytest.mark.django_db
GANG_FIXTURES = [f for f in POD_FIXTURES if EXPECTED[f]["podGroup"]]


@pytest.fixture
def server():
    with KubeTestServer(validate_schemas=True) as srv:
        srv.load(priority_classes())
        yield srv


@pytest.fixture
def api(server, tmp_path):
    api_client = config.new_client_from_config(
        config_file=str(server.write_kubeconfig(tmp_path / "kubeconfig"))
    )
    yield api_client
    api_client.close()


@pytest.fixture
def kube_cluster(server, tmp_path):
    cluster = KubeCluster.from_kubeconfig(
        server.write_kubeconfig(tmp_path / "kubeconfig-task"), timeout=(2.0, 5.0)
    )
    runtime.set_cluster(cluster)
    yield cluster
    runtime.reset_cluster()
    cluster.close()


def through_the_webhook(pod: dict) -> dict:
    """POST the pod's CREATE review to /admission/mutate and apply the JSONPatch it answers."""
    response = Client().generic(
        "POST", "/admission/mutate", review_bytes(pod), content_type="application/json"
    )
    assert response.status_code == 200
    answer = response.json()["response"]
    assert answer["allowed"] and answer["patchType"] == "JSONPatch"
    return jsonpatch.apply_patch(pod, json.loads(base64.b64decode(answer["patch"])))


def create_owner(api: client.ApiClient, owner: dict) -> None:
    resource = resource_named(owner["apiVersion"], owner["kind"])
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        resource.group, resource.version, owner["metadata"]["namespace"], resource.plural, owner
    )


def podgroup_posts(server: KubeTestServer) -> list[dict]:
    return [
        r
        for r in server.requests("/apis/scheduling.k8s.io/v1beta1/", "POST")
        if r["path"].endswith("/podgroups")
    ]


@pytest.mark.parametrize("fixture", GANG_FIXTURES)
def test_an_admitted_pod_gets_its_podgroup_once(fixture, server, api, kube_cluster):
    expected = EXPECTED[fixture]
    if expected.get("owner"):
        create_owner(api, load_owner(expected["owner"]))
    pod = through_the_webhook(load_pod(fixture))
    namespace = pod["metadata"]["namespace"]
    client.CoreV1Api(api).create_namespaced_pod(namespace, pod)

    result = ensure_podgroups.apply().get()
    assert result["created"] == [f"{namespace}/{expected['podGroup']}"], result

    group = client.SchedulingV1beta1Api(api).read_namespaced_pod_group(
        expected["podGroup"], namespace, _preload_content=False
    )
    group = json.loads(group.data)
    schema_validate(group, "1.37.0", strict=True)
    spec = group["spec"]
    assert spec["schedulingPolicy"] == {"gang": {"minCount": expected["minCount"]}}
    # The pod's own choice, else the default for training-style gangs.
    wanted = (pod["metadata"].get("annotations") or {}).get("gangweb.io/disruption-mode", "all")
    assert spec["disruptionMode"] == {wanted: {}}
    # The PriorityClass's policy, as the server's priority admission computed it for the pod (enforce, the
    # default mode, does not override it: a real server refuses any other); gangweb's own in the annotation.
    assert spec["preemptionPolicy"] == pod["spec"].get("preemptionPolicy", "PreemptLowerPriority")
    own_policy = (pod["metadata"].get("annotations") or {}).get("gangweb.io/preemption-policy")
    assert group["metadata"]["annotations"]["gangweb.io/preemption-policy"] == (
        "Never" if own_policy == "Never" else "PreemptLowerPriority"
    )
    assert spec["priority"] == pod["spec"].get("priority", 0)  # filled by priority admission
    assert spec.get("priorityClassName") == pod["spec"].get("priorityClassName")
    entry = LedgerEntry.objects.get(kind="podgroup.created")
    assert (entry.namespace, entry.name) == (namespace, expected["podGroup"])

    posts = len(podgroup_posts(server))
    assert posts == 1
    again = ensure_podgroups.apply().get()
    assert again["created"] == [] and len(podgroup_posts(server)) == posts  # nothing written the second time
    assert LedgerEntry.objects.filter(kind="podgroup.created").count() == 1


def test_per_namespace_mode_and_disruption_mode_reach_the_podgroup(server, api, kube_cluster, settings):
    settings.GANGWEB_NAMESPACE_MODES = {"ml-team": "observe"}
    settings.GANGWEB_NAMESPACE_DISRUPTION_MODES = {"ml-team": "single"}
    create_owner(api, load_owner("job-resnet-train.yaml"))
    pod = through_the_webhook(load_pod("job-parallel.yaml"))
    for _ in range(3):  # the Job's pods; one group for all of them
        client.CoreV1Api(api).create_namespaced_pod("ml-team", pod)
    assert ensure_podgroups.apply().get()["created"] == ["ml-team/resnet-train"]
    group = client.SchedulingV1beta1Api(api).read_namespaced_pod_group("resnet-train", "ml-team").to_dict()
    assert group["spec"]["preemption_policy"] == "PreemptLowerPriority"  # observe: the pod's own
    assert group["spec"]["disruption_mode"]["single"] == {}
    assert group["metadata"]["owner_references"][0]["kind"] == "Job"  # garbage-collected with the Job


def test_a_pod_whose_owner_is_not_there_yet_waits_for_the_next_pass(server, api, kube_cluster):
    pod = through_the_webhook(load_pod("jobset-worker.yaml"))
    client.CoreV1Api(api).create_namespaced_pod(pod["metadata"]["namespace"], pod)
    first = ensure_podgroups.apply().get()
    assert first["created"] == [] and first["waiting"] == ["ml-team/llama-ft"], first
    assert podgroup_posts(server) == []
    create_owner(api, load_owner("jobset-llama-ft.yaml"))
    assert ensure_podgroups.apply().get()["created"] == ["ml-team/llama-ft"]


def test_a_podgroup_created_by_someone_else_first_is_left_alone(server, api, kube_cluster):
    create_owner(api, load_owner("job-resnet-train.yaml"))
    pod = through_the_webhook(load_pod("job-parallel.yaml"))
    client.CoreV1Api(api).create_namespaced_pod("ml-team", pod)
    theirs = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "resnet-train", "namespace": "ml-team"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    client.SchedulingV1beta1Api(api).create_namespaced_pod_group("ml-team", theirs)
    assert ensure_podgroups.apply().get()["created"] == []
    kept = client.SchedulingV1beta1Api(api).read_namespaced_pod_group("resnet-train", "ml-team")
    assert kept.spec.scheduling_policy.gang.min_count == 2


def test_the_adapter_treats_already_exists_as_success(server, kube_cluster):
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"schedulingPolicy": {"basic": {}}},
    }
    assert kube_cluster.create_object(group) is True
    assert kube_cluster.create_object(group) is False
    assert [r["code"] for r in podgroup_posts(server)] == [201, 409]
    assert kube_cluster.get_object("ray.io/v1", "RayCluster", "ns", "absent") is None


def test_the_simulated_cluster_path(settings):
    simulated = SimulatedCluster(nodes=4, seed=3)
    own_groups = sum(1 for o in simulated.snapshot_objects() if o["kind"] == "PodGroup")
    runtime.set_cluster(simulated)
    try:
        # The simulation's own gangs all have their groups: nothing to do.
        assert ensure_podgroups.apply().get()["created"] == []
        simulated.create_object(load_owner("pytorchjob-gpt-neox.yaml"))
        pod = through_the_webhook(load_pod("pytorchjob-worker.yaml"))
        pod["metadata"]["name"] = "gpt-neox-worker-0"
        simulated.create_object(pod)
        assert ensure_podgroups.apply().get()["created"] == ["ml-team/gpt-neox"]
        assert ensure_podgroups.apply().get()["created"] == []
    finally:
        runtime.reset_cluster()
    groups = [o for o in simulated.snapshot_objects() if o["kind"] == "PodGroup"]
    assert len(groups) == own_groups + 1
    [made] = [g for g in groups if g["metadata"]["name"] == "gpt-neox"]
    schema_validate(made, "1.37.0", strict=True)
    assert (
        made["spec"]["schedulingPolicy"]["gang"]["minCount"] == EXPECTED["pytorchjob-worker.yaml"]["minCount"]
    )
