"""The GPU map's picture (gangweb/clusterview/picture.py): from any cluster's objects, with the simulation's
device holders or by start order, cut to a reader's scope, and its deltas."""

from __future__ import annotations

import copy
import json
import time

import pytest

from gangweb.access.scope import VIEWER, Scope
from gangweb.clusterview import scoping
from gangweb.clusterview.picture import build_picture
from gangweb.dashboard import mapdelta
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


def owned(picture):
    return {n["name"]: sum(o is not None for o in n["gpus"]) for n in picture["nodes"]}


@pytest.mark.parametrize("ticks", [0, 40])
def test_holders_and_start_order_draw_the_same_counts(ticks):
    """The simulation says which GPU each pod holds; without that the picture counts the same."""
    cluster = SimulatedCluster(nodes=32, seed=3, clock=SteppedClock())
    for _ in range(ticks):
        cluster.tick()
    objects = cluster.snapshot_objects()
    held = build_picture(objects, now=cluster.now, cluster="simulated", holders=cluster.device_holders())
    counted = build_picture(objects, now=cluster.now, cluster="simulated")
    assert held["totals"] == counted["totals"]
    assert owned(held) == owned(counted)
    assert [d["name"] for d in held["domains"]] == [f"rack-{i}" for i in range(4)]
    assert held["totals"]["allocatedGpus"] == cluster.allocated_gpus
    # Every square names the gang whose pod the simulation says holds it.
    pod_gang = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": f"{p['metadata']['namespace']}/"
        + p["spec"]["schedulingGroup"]["podGroupName"]
        for p in objects
        if p["kind"] == "Pod"
    }
    holders = cluster.device_holders()
    for node in held["nodes"]:
        for i, owner in enumerate(node["gpus"]):
            expected = pod_gang.get(holders[node["name"]][i]) if holders[node["name"]][i] else None
            assert (held["gangs"][owner]["key"] if owner is not None else None) == expected
    waiting = [g for g in held["gangs"] if g["state"] == "waiting"]
    assert held["totals"]["waitingGangs"] == len(waiting) and all(g["reason"] for g in waiting)
    json.dumps(held)


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
        podgroup("eval", "low", 2, mode="single"),
        pod("eval-0", 1, group="eval"),
        pod("eval-1", 1, group="eval"),
    ]
    objects[-1]["status"]["nominatedNodeName"] = "gpu-b"
    objects.append(
        {
            "kind": "ResourceSlice",
            "apiVersion": "resource.k8s.io/v1",
            "metadata": {"name": "s"},
            "spec": {"nodeName": "gpu-c", "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]},
        }
    )
    before = copy.deepcopy(objects)
    picture = build_picture(objects, now=NOW, cluster="kube")
    assert objects == before, "the cluster's objects are read, never changed"
    json.dumps(picture)

    nodes = {n["name"]: n for n in picture["nodes"]}
    assert set(nodes) == {"gpu-a", "gpu-b", "gpu-c"}  # a node without GPUs is not drawn
    # No rack label: the zone, then one domain for the rest.
    assert [(d["name"], d["count"]) for d in picture["domains"]] == [("zone-1", 2), ("all nodes", 1)]
    assert [n["name"] for n in picture["nodes"]] == ["gpu-a", "gpu-b", "gpu-c"]
    assert (nodes["gpu-a"]["cordoned"], nodes["gpu-c"]["ready"]) == (True, False)

    gangs = picture["gangs"]
    owners_b = [gangs[o]["key"] if o is not None else None for o in nodes["gpu-b"]["gpus"]]
    # The pod that started first holds the first GPUs; the finished pod holds none.
    assert owners_b == ["team-a/notebook"] * 2 + ["team-a/train"] * 4 + [None] * 2
    # The waiting pod nominated to gpu-b is drawn on a free square there.
    nominated = [gangs[o]["key"] if o is not None else None for o in nodes["gpu-b"]["nominated"]]
    assert nominated == [None] * 6 + ["team-a/eval", None]
    # DRA devices from the node's ResourceSlice, after its extended-resource GPUs.
    assert nodes["gpu-c"]["dra"] == [False, False, True, True] and len(nodes["gpu-c"]["gpus"]) == 4
    train = next(g for g in gangs if g["key"] == "team-a/train")
    assert (train["priority"], train["tier"], train["disruption"], train["topology"]) == (
        1000,
        0,
        "all",
        True,
    )
    assert (train["pods"], train["placed"], train["gpus"], train["state"]) == (2, 2, 8, "running")

    assert picture["totals"] == {
        "nodes": 3,
        "gpus": 16,
        "allocatedGpus": 10,
        "freeGpus": 2,  # gpu-a is cordoned and gpu-c not ready: their free GPUs are not free to use
        "cordonedGpus": 4,
        "nominatedGpus": 1,
        "runningGangs": 2,
        "waitingGangs": 1,
        "waitingGpus": 2,
        "brokenGangs": 0,
        "brokenGpus": 0,
    }
    waiting = next(g for g in gangs if g["key"] == "team-a/eval")
    assert waiting["waitingSeconds"] == 600  # since its pods were created
    # Counted from the same picture: gpu-b has the 2 free GPUs its 2 pods of 1 GPU need.
    assert waiting["reason"] == "needs 2 \u00d7 1 GPU; there is room now: waiting to be bound"
    assert [(t["priorityClass"], t["allocatedGpus"]) for t in picture["tiers"]] == [("high", 8), ("low", 2)]


def test_the_reason_agrees_with_the_free_squares():
    objects = [
        priority_class("high", 1000),
        node("n1", 8, {"topology.gangweb.io/rack": "r1"}),
        node("n2", 8, {"topology.gangweb.io/rack": "r2"}),
        pod("a", 6, "n1", start=CREATED),
        pod("b", 5, "n2", start=CREATED),
        podgroup("big", "high", 2, topology=True),
        pod("big-0", 4, group="big"),
        pod("big-1", 4, group="big"),
        podgroup("wide", "high", 1),
        pod("wide-0", 6, group="wide"),
    ]
    picture = build_picture(objects, now=NOW, cluster="kube")
    rows = {g["key"]: g for g in picture["gangs"]}
    assert picture["totals"]["freeGpus"] == 5
    assert rows["team-a/big"]["reason"] == (
        "needs 2 \u00d7 4 GPUs in one rack; the best rack (r2) has no room (3 GPUs free there)"
    )
    assert rows["team-a/wide"]["reason"] == "needs 1 \u00d7 6 GPUs; only 5 GPUs free in the cluster"


def test_a_team_reader_sees_squares_of_other_teams_as_in_use_without_names():
    cluster = SimulatedCluster(nodes=16, seed=5)
    picture = build_picture(cluster.snapshot_objects(), now=cluster.now, cluster="simulated")
    namespaces = sorted({g["namespace"] for g in picture["gangs"]})
    mine = namespaces[0]
    cut = scoping.cut_picture(picture, Scope(user="a", per_namespace={mine: VIEWER}))
    text = json.dumps(cut)
    for other in namespaces[1:]:
        assert other not in text
    assert cut["gangs"][-1]["label"] == "in use, other namespace"
    assert cut["totals"]["allocatedGpus"] == picture["totals"]["allocatedGpus"], "squares stay taken"
    assert owned(cut) == owned(picture)
    assert cut["totals"]["waitingGangs"] == sum(
        1 for g in picture["gangs"] if g["state"] == "waiting" and g["namespace"] == mine
    )


def test_a_delta_names_the_changed_nodes_and_cuts_to_the_scope():
    cluster = SimulatedCluster(nodes=16, seed=5, clock=SteppedClock())
    old = build_picture(
        cluster.snapshot_objects(), now=cluster.now, cluster="s", holders=cluster.device_holders()
    )
    for _ in range(10):
        cluster.tick()
    new = build_picture(
        cluster.snapshot_objects(), now=cluster.now, cluster="s", holders=cluster.device_holders()
    )
    delta = mapdelta.diff(old, new)
    changed = {entry[0] for entry in delta["nodes"]}
    assert changed == {i for i in range(16) if mapdelta.node_entry(old, i) != mapdelta.node_entry(new, i)}
    assert changed, "ten ticks move something"
    # Applying the delta to the old picture's keys gives the new picture's keys.
    for index, owners, *_ in delta["nodes"]:
        assert owners == mapdelta.node_entry(new, index)[1]
    mine = new["gangs"][0]["namespace"]
    cut = scoping.cut_delta(delta, Scope(user="a", per_namespace={mine: VIEWER}))
    keys = {k for _, owners, *_ in cut["nodes"] for k in owners if k}
    assert keys <= {k for k in keys if k == scoping.OTHER or k.startswith(mine + "/")}
    assert all(g["namespace"] == mine for g in cut["gangs"])
    # A node set that changed is no delta: browsers fetch the picture again.
    smaller = {**new, "nodes": new["nodes"][:-1]}
    assert mapdelta.diff(old, smaller) is None


@pytest.mark.django_db
def test_the_picture_of_a_real_api_server_cluster(client, settings, tmp_path):
    """GANGWEB_CLUSTER=kube through the official client against the local API test server."""
    from gangweb.dashboard import live
    from kubetestserver import KubeTestServer
    from scheduler.kube import KubeCluster
    from scheduler.preemption import runtime

    simulated = SimulatedCluster(nodes=16, seed=5)
    settings.DEMO = True
    settings.GANGWEB_CLUSTER = "kube"
    with KubeTestServer() as server:
        server.load(simulated.snapshot_objects())
        runtime.set_cluster(KubeCluster.from_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig")))
        live.reset()
        try:
            state = client.get("/api/v1/map/").json()
        finally:
            runtime.reset_cluster()
            live.reset()
    assert state["cluster"] == "kubernetes"  # drawn from the API's objects
    assert state["totals"]["allocatedGpus"] == simulated.allocated_gpus > 0
    assert len(state["nodes"]) == 16
    assert abs(time.time() - state["time"]) < 60


def test_dra_devices_are_drawn_by_name_and_mig_partitions_as_parts_of_their_gpu():
    cluster = SimulatedCluster(nodes=16, seed=7, clock=SteppedClock(), devices="dra")
    for _ in range(5):
        cluster.tick()
    objects = cluster.snapshot_objects()
    picture = build_picture(objects, now=cluster.now, cluster="simulated", holders=cluster.device_holders())
    slices = {s["spec"]["nodeName"]: s["spec"]["devices"] for s in objects if s["kind"] == "ResourceSlice"}
    nodes = {n["name"]: n for n in picture["nodes"]}
    for name, node in nodes.items():
        assert node["devices"] == [d["name"] for d in slices[name]], "each square named as its slice says"
        assert all(node["dra"])
    partitioned = {name: n for name, n in nodes.items() if "mig" in n}
    assert sorted(partitioned) == ["gpu-r0-n07"], "the last node of every other rack runs MIG"
    node = partitioned["gpu-r0-n07"]
    assert node["devices"][:6] == [f"gpu-{i}" for i in range(6)] and node["mig"][:6] == [None] * 6
    assert node["mig"][6:] == [[6, "3g.40gb"], [6, "3g.40gb"], [7, "3g.40gb"], [7, "3g.40gb"]]
    assert node["devices"][6] == "gpu-6-mig-9-0-4"
    assert node["gpus"][6:] == [None] * 4, "no simulated gang asks for a partition"
    # The binder holds only whole GPUs there, and the figures count GPUs, not partitions.
    assert len(cluster.device_holders()["gpu-r0-n07"]) == 6
    assert picture["totals"]["gpus"] == 15 * 8 + 6 and picture["totals"]["migPartitions"] == 4
    held = sum(1 for n in nodes.values() for o in n["gpus"] if o is not None)
    assert picture["totals"]["allocatedGpus"] == held


def test_a_teams_event_reaches_it_without_the_names_of_other_teams_victims():
    team = Scope(user="alice", per_namespace={"team-llm": VIEWER})
    payload = {
        "namespace": "team-llm",
        "podGroup": "team-llm/pretrain-0039",
        "pod": "research/train-0009-3",
        "message": "evicted research/train-0009-3 for team-llm/pretrain-0039",
        "victims": [{"namespace": "research", "name": "train-0009", "pods": ["research/train-0009-3"]}],
    }
    message = {"type": "eviction.result", "topic": "ledger", "seq": 4, "payload": payload}
    cut = scoping.cut_message(message, team)
    assert "research" not in json.dumps(cut)
    assert cut["payload"]["podGroup"] == "team-llm/pretrain-0039" and cut["seq"] == 4
    assert cut["payload"]["victims"][0]["otherNamespace"] is True
    assert scoping.cut_message(message, Scope(user="r", per_namespace={"research": VIEWER})) is None
    assert scoping.cut_message(message, Scope(user="admin", everywhere=VIEWER)) == message
