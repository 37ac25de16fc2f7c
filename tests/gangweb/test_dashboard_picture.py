"""The dashboard picture of a cluster that is not simulated, built from its Kubernetes objects."""

from __future__ import annotations

import copy
import json
import time

import pytest

from gangweb.dashboard.picture import picture_from_objects
from scheduler.simulation import SimulatedCluster, SteppedClock

CREATED = "2027-01-15T08:00:00Z"
NOW = 1_800_000_000.0 + 600  # 1_800_000_000 is CREATED


def node(name, gpus, labels=None, ready=True, unschedulable=False):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "allocatable": {"cpu": "64", "nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "64"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name,
    gpus,
    node_name=None,
    group=None,
    phase=None,
    start=None,
    limits_only=False,
    priority_class=None,
    conditions=None,
):
    resources = (
        {"limits": {"nvidia.com/gpu": str(gpus)}}
        if limits_only
        else {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "1"}}
    )
    spec = {"containers": [{"name": "c", "image": "x", "resources": resources}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    status = {"phase": phase or ("Running" if node_name else "Pending")}
    if start:
        status["startTime"] = start
    if conditions:
        status["conditions"] = conditions
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "creationTimestamp": CREATED},
        "spec": spec,
        "status": status,
    }


def podgroup(name, priority_class, min_count, mode="all", topology=False, conditions=None):
    spec = {
        "schedulingPolicy": {"gang": {"minCount": min_count}},
        "disruptionMode": {mode: {}},
        "priorityClassName": priority_class,
    }
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": "topology.gangweb.io/rack"}]}
    obj = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": spec,
    }
    if conditions:
        obj["status"] = {"conditions": conditions}
    return obj


def priority_class(name, value):
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


@pytest.mark.parametrize("ticks", [0, 40])
def test_agrees_with_the_simulated_clusters_own_picture(ticks):
    cluster = SimulatedCluster(nodes=32, seed=3, clock=SteppedClock())
    for _ in range(ticks):
        cluster.tick()
    own = cluster.summary()
    built = picture_from_objects(cluster.snapshot_objects(), now=cluster.now, cluster="simulated")
    for key in ("gpus", "allocatedGpus", "freeGpus", "runningGangs", "pendingGangs", "pendingGpus", "nodes"):
        assert built["totals"][key] == own["totals"][key], key

    def per_node(picture):
        return {
            n["name"]: sum(o is not None for o in n["gpus"]) for r in picture["racks"] for n in r["nodes"]
        }

    def waiting(picture):
        return sorted(picture["gangs"][p["gang"]]["podGroup"] for p in picture["pending"])

    assert per_node(built) == per_node(own)
    assert [r["name"] for r in built["racks"]] == [r["name"] for r in own["racks"]]
    assert waiting(built) == waiting(own)

    def waited(picture):
        return {picture["gangs"][p["gang"]]["podGroup"]: p["waitingSeconds"] for p in picture["pending"]}

    assert waited(built) == waited(own)
    own_tiers = {t["priorityClass"]: t["allocatedGpus"] for t in own["tiers"] if t["allocatedGpus"]}
    assert {t["priorityClass"]: t["allocatedGpus"] for t in built["tiers"] if t["allocatedGpus"]} == own_tiers


def test_reads_real_world_shapes():
    objects = [
        priority_class("high", 1000),
        priority_class("low", 10),
        node("cpu-only", 0),
        node("gpu-b", 8, {"topology.kubernetes.io/zone": "zone-1"}),
        node("gpu-a", 4, {"topology.kubernetes.io/zone": "zone-1"}, unschedulable=True),
        node("gpu-c", 2, ready=False),
        podgroup("train", "high", 2, topology=True),
        pod("train-0", 4, "gpu-b", group="train", start="2027-01-15T08:05:00Z"),
        pod("train-1", 4, "gpu-a", group="train", start="2027-01-15T08:05:00Z"),
        pod("notebook", 2, "gpu-b", priority_class="low", start="2027-01-15T07:00:00Z", limits_only=True),
        pod("done", 2, "gpu-b", phase="Succeeded"),
        podgroup(
            "eval",
            "low",
            2,
            mode="single",
            conditions=[
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/4 nodes are available",
                }
            ],
        ),
        pod("eval-0", 1, group="eval"),
        pod("eval-1", 1, group="eval"),
    ]
    before = copy.deepcopy(objects)
    picture = picture_from_objects(objects, now=NOW, cluster="kube")
    assert objects == before, "the cluster's objects are read, never changed"
    json.dumps(picture)

    nodes = {n["name"]: n for r in picture["racks"] for n in r["nodes"]}
    assert set(nodes) == {"gpu-a", "gpu-b", "gpu-c"}  # a node without GPUs is not drawn
    assert [r["name"] for r in picture["racks"]] == [
        "zone-1",
        "all nodes",
    ]  # no rack label: zone, then one group
    assert (nodes["gpu-a"]["ready"], nodes["gpu-b"]["ready"], nodes["gpu-c"]["ready"]) == (False, True, False)

    gangs = picture["gangs"]
    owners_b = [gangs[o]["podGroup"] if o is not None else None for o in nodes["gpu-b"]["gpus"]]
    # The pod that started first holds the first GPUs; the finished pod holds none.
    assert owners_b == ["team-a/notebook"] * 2 + ["team-a/train"] * 4 + [None] * 2
    train = next(g for g in gangs if g["podGroup"] == "team-a/train")
    assert (train["priority"], train["tier"], train["disruption"], train["topology"]) == (
        1000,
        0,
        "all",
        True,
    )
    assert (train["pods"], train["gpus"], train["runningPods"], train["state"]) == (2, 8, 2, "running")

    assert picture["totals"] == {
        "nodes": 3,
        "gpus": 14,
        "allocatedGpus": 10,
        "freeGpus": 4,
        "runningGangs": 2,
        "pendingGangs": 1,
        "pendingGpus": 2,
    }
    [waiting] = picture["pending"]
    assert gangs[waiting["gang"]]["podGroup"] == "team-a/eval"
    assert waiting["reason"] == "0/4 nodes are available"
    assert waiting["waitingSeconds"] == 600  # since its pods were created
    assert [(t["priorityClass"], t["allocatedGpus"]) for t in picture["tiers"]] == [("high", 8), ("low", 2)]


@pytest.mark.django_db
def test_the_page_draws_a_real_api_server_cluster(client, settings, tmp_path):
    """GANGWEB_CLUSTER=kube through the official client against the local API test server."""
    from kubetestserver import KubeTestServer
    from scheduler.kube import KubeCluster
    from scheduler.preemption import runtime

    simulated = SimulatedCluster(nodes=16, seed=5)
    settings.DEMO = True
    settings.GANGWEB_CLUSTER = "kube"
    with KubeTestServer() as server:
        server.load(simulated.snapshot_objects())
        runtime.set_cluster(KubeCluster.from_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig")))
        try:
            response = client.get("/")
        finally:
            runtime.reset_cluster()
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index('type="application/json">') + len('type="application/json">')
    state = json.loads(html[start : html.index("</script>", start)])
    own = simulated.summary()
    assert state["cluster"] == "kubernetes"  # drawn from the API's objects, not the simulation's own view
    assert state["totals"]["allocatedGpus"] == own["totals"]["allocatedGpus"] > 0
    assert state["totals"]["pendingGangs"] == own["totals"]["pendingGangs"]
    assert sum(len(r["nodes"]) for r in state["racks"]) == 16
    assert abs(time.time() - datetime_seconds(state["time"])) < 60


def datetime_seconds(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
