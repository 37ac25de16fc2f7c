"""Gang health from the real API server's watch: a CompositePodGroup that loses one of the groups its
``minGroupCount`` needs breaks its other groups too, seen from the events of the lost group's pod alone,
and a composite deleted lets them recover (gangweb's kube adapter, its watch cache, ``health.HealthWatch``);
in an ``evict`` namespace the reaper ends the composite's tree as one unit through the Eviction API."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from scheduler import health
from scheduler.cluster import current_objects
from scheduler.kube import KubeCluster
from scheduler.preemption import healthwatch, reaper, runtime
from scheduler.preemption.models import Eviction, EvictionState, PreemptionRequest, RequestState

WAIT = 120.0  # a loaded 2-core machine


def as_list(*objects: dict) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})


def gpu_node(name: str) -> dict:
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"}, "labels": {"type": "kwok"}},
        "status": {"capacity": resources, "allocatable": resources},
    }


def composite(namespace: str, min_group_count: int, disruption: str = "single") -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "serve", "namespace": namespace},
        "spec": {
            "workloadRef": {"workloadName": "serving", "templateName": "serve"},
            "schedulingPolicy": {"gang": {"minGroupCount": min_group_count}},
            "disruptionMode": {disruption: {}},
        },
    }


def group(namespace: str, name: str) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 1}},
            "parentCompositePodGroupName": "serve",
            "workloadRef": {"workloadName": "serving", "templateName": "replica"},
        },
    }


def member(namespace: str, name: str, podgroup: str, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node,  # bound at creation: the test is about health, not placement
            "schedulingGroup": {"podGroupName": podgroup},
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}},
                }
            ],
            "tolerations": [{"operator": "Exists"}],
        },
    }


def until(what: str, check, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := check()) is not None and found is not False:
            return found
        time.sleep(0.2)
    pytest.fail(f"waited {timeout:.0f} s for {what}")


@pytest.fixture
def adapter(real_cluster):
    cluster = KubeCluster.from_kubeconfig(real_cluster.kubeconfig, watch_timeout=60)
    cluster.start(timeout=WAIT)
    try:
        yield cluster
    finally:
        cluster.close()


def test_the_watch_sees_a_composite_short_of_groups_from_one_pods_deletion(real_cluster, namespace, adapter):
    node = f"gpu-{uuid.uuid4().hex[:6]}"
    objects = [
        gpu_node(node),
        composite(namespace, 2),
        group(namespace, "replica-0"),
        group(namespace, "replica-1"),
    ]
    objects += [member(namespace, f"replica-{r}-0", f"replica-{r}", node) for r in range(2)]
    real_cluster.run("apply", "-f", "-", input=as_list(*objects))
    try:
        watch = health.HealthWatch(lambda _h: None)
        adapter.add_listener(watch.on_event)
        keys = [f"{namespace}/replica-{r}" for r in range(2)]
        until("the watch cache to hold both members", lambda: adapter_has(adapter, namespace, 2))
        watch.seed(current_objects(adapter))
        until(
            "both groups judged healthy",
            lambda: all((h := watch.health(k)) is not None and not h.broken for k in keys),
        )

        real_cluster.run("delete", "pod", "-n", namespace, "replica-0-0", "--grace-period=0", "--force")
        # replica-1 still runs its member, but its composite runs 1 of the 2 groups it needs.
        sibling = until(
            "replica-1 broken by its composite",
            lambda: (h := watch.health(keys[1])) is not None and h.broken and h,
        )
        assert sibling.causes == (health.COMPOSITE_SHORT,) and sibling.composite == f"{namespace}/serve"
        assert sibling.held_gpus == 2 and sibling.running == 1

        real_cluster.run("delete", "compositepodgroups.v1alpha3.scheduling.k8s.io", "-n", namespace, "serve")
        until("replica-1 healthy once no composite asks for it", lambda: not watch.health(keys[1]).broken)
    finally:
        real_cluster.run("delete", "node", node, "--wait=false", check=False)


def adapter_has(adapter, namespace: str, pods: int) -> bool:
    """The watch cache holds ``pods`` pods of ``namespace`` or more, and its composite and PodGroups."""
    kinds = [
        o.get("kind")
        for o in current_objects(adapter)
        if (o.get("metadata") or {}).get("namespace") == namespace
    ]
    return kinds.count("Pod") >= pods and "CompositePodGroup" in kinds and kinds.count("PodGroup") >= 2


@pytest.mark.django_db(transaction=True)
def test_the_reaper_evicts_a_short_composites_tree_as_one_unit(real_cluster, namespace, adapter, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_NAMESPACE_MODES = {namespace: "enforce"}
    settings.GANGWEB_NAMESPACE_REAPERS = {namespace: "evict"}
    settings.GANGWEB_REAP_GRACE_SECONDS = 0
    node = f"gpu-{uuid.uuid4().hex[:6]}"
    objects = [gpu_node(node), composite(namespace, 3, "all")]
    objects += [group(namespace, f"replica-{r}") for r in range(3)]
    objects += [member(namespace, f"replica-{r}-0", f"replica-{r}", node) for r in range(3)]
    solo = {**group(namespace, "solo"), "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}}
    objects += [solo, member(namespace, "solo-0", "solo", node)]
    real_cluster.run("apply", "-f", "-", input=as_list(*objects))
    runtime.set_cluster(adapter)
    try:
        until("the watch cache to hold every member", lambda: adapter_has(adapter, namespace, 4))
        real_cluster.run("delete", "pod", "-n", namespace, "replica-0-0", "--grace-period=0", "--force")
        until("the deletion in the watch cache", lambda: not adapter_has(adapter, namespace, 4))
        keys = [f"{namespace}/replica-1", f"{namespace}/replica-2"]
        assert healthwatch.sweep(current_objects(adapter))["broken"] == keys

        [request_id] = reaper.sweep(current_objects(adapter))
        request = PreemptionRequest.objects.get(pk=request_id)
        assert request.state == RequestState.SUCCEEDED, request.reason
        rows = list(Eviction.objects.filter(plan__request=request))
        assert {r.pod for r in rows} == {f"{namespace}/replica-1-0", f"{namespace}/replica-2-0"}
        assert {(r.victim_unit, r.state) for r in rows} == {
            (f"CompositePodGroup {namespace}/serve", EvictionState.EVICTED)
        }
        left = json.loads(real_cluster.run("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
        assert [p["metadata"]["name"] for p in left if not p["metadata"].get("deletionTimestamp")] == [
            "solo-0"
        ]
    finally:
        runtime.reset_cluster()
        real_cluster.run("delete", "node", node, "--wait=false", check=False)
