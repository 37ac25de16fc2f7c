"""The simulated cluster: deterministic, real Kubernetes shapes, and a Cluster that behaves like one."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from datetime import datetime

import pytest
from kubernetes_validate.utils import ValidationError, validate

from scheduler.cluster import Cluster, ClusterEvent, of_kind, split_key
from scheduler.simulation import SimulatedCluster, SteppedClock
from scheduler.simulation.catalog import GPU, RACK_LABEL

K8S_VERSION = "1.37.0"


def advanced(seed: int = 7, nodes: int = 64, ticks: int = 40) -> SimulatedCluster:
    cluster = SimulatedCluster(nodes=nodes, seed=seed, clock=SteppedClock())
    for _ in range(ticks):
        cluster.tick()
    return cluster


def quantity(value: str) -> int:
    return int(value[:-2]) if value.endswith("Gi") else int(value)


def pods_of(objects, podgroup_key: str) -> list[dict]:
    namespace, name = split_key(podgroup_key)
    return [
        p
        for p in of_kind(objects, "Pod")
        if p["metadata"]["namespace"] == namespace and p["spec"]["schedulingGroup"]["podGroupName"] == name
    ]


def test_timestamps_follow_the_wall_clock_by_default():
    before = time.time()
    cluster = SimulatedCluster(nodes=8, seed=1)
    cluster.tick()
    objects = cluster.snapshot_objects()
    stamps = [
        parse_time(p["status"]["startTime"]) for p in of_kind(objects, "Pod") if p["spec"].get("nodeName")
    ]
    assert stamps and max(stamps) <= time.time()
    assert abs(cluster.now - before) < 5


def parse_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def test_is_a_cluster():
    assert isinstance(SimulatedCluster(nodes=8, seed=1), Cluster)


def test_default_shape_is_64_nodes_of_8_gpus_in_8_racks():
    objects = SimulatedCluster().snapshot_objects()
    nodes = of_kind(objects, "Node")
    assert len(nodes) == 64
    assert {n["status"]["allocatable"][GPU] for n in nodes} == {"8"}
    racks = Counter(n["metadata"]["labels"][RACK_LABEL] for n in nodes)
    assert len(racks) == 8 and set(racks.values()) == {8}
    for node in nodes:
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
        assert labels["topology.kubernetes.io/zone"]
        assert {"cpu", "memory", "pods", GPU} <= set(node["status"]["allocatable"])
        assert {"type": "Ready", "status": "True"}.items() <= node["status"]["conditions"][0].items()


def test_same_seed_same_world_different_seed_different_world():
    a, b = (SimulatedCluster(nodes=32, seed=11, clock=SteppedClock()) for _ in range(2))
    changes_a = [a.tick() for _ in range(60)]
    changes_b = [b.tick() for _ in range(60)]
    assert changes_a == changes_b
    assert any(changes_a), "sixty ticks without a single change is not a live cluster"
    assert json.dumps(a.snapshot_objects(), sort_keys=True) == json.dumps(
        b.snapshot_objects(), sort_keys=True
    )
    c = advanced(seed=12, nodes=32, ticks=60)
    assert json.dumps(c.snapshot_objects(), sort_keys=True) != json.dumps(
        a.snapshot_objects(), sort_keys=True
    )


def shape(obj, prefix="") -> frozenset[str]:
    """Every key path of an object: two objects with the same shape exercise the same schema parts."""
    paths = set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            paths |= {f"{prefix}.{key}"} | shape(value, f"{prefix}.{key}")
    elif isinstance(obj, list):
        for item in obj:
            paths |= shape(item, prefix + "[]")
    return frozenset(paths)


def test_every_object_shape_validates_against_the_1_37_schemas():
    cluster = advanced(seed=7, ticks=30)
    running = next(p for p in of_kind(cluster.snapshot_objects(), "Pod") if p["spec"].get("nodeName"))
    cluster.mark_disruption_target(running["metadata"]["namespace"], running["metadata"]["name"], "test")
    objects = cluster.snapshot_objects()
    kinds = Counter(o["kind"] for o in objects)
    assert {"Node", "Pod", "PodGroup", "PriorityClass", "PodDisruptionBudget"} <= set(kinds)
    # The validator takes ~70 ms an object; one object per distinct shape covers them all.
    representatives = {(o["kind"], shape(o)): o for o in objects}
    assert len(representatives) >= 8
    for obj in representatives.values():
        validate(obj, K8S_VERSION, strict=True)


def test_strict_validation_would_catch_a_wrong_field():
    # Guards the test above: the validator really is strict about our shapes.
    podgroup = of_kind(SimulatedCluster(nodes=8).snapshot_objects(), "PodGroup")[0]
    podgroup["spec"]["schedulingPolicy"]["gang"]["minMembers"] = 2
    with pytest.raises(ValidationError):
        validate(podgroup, K8S_VERSION, strict=True)


def test_snapshot_has_gangs_of_several_priorities_modes_and_topology():
    objects = advanced(ticks=10).snapshot_objects()
    groups = of_kind(objects, "PodGroup")
    assert len({g["spec"]["priority"] for g in groups}) >= 3
    assert {next(iter(g["spec"]["disruptionMode"])) for g in groups} == {"all", "single"}
    assert any(
        g["spec"].get("schedulingConstraints", {}).get("topology") == [{"key": RACK_LABEL}] for g in groups
    )
    classes = {pc["metadata"]["name"]: pc["value"] for pc in of_kind(objects, "PriorityClass")}
    for group in groups:
        assert classes[group["spec"]["priorityClassName"]] == group["spec"]["priority"]
        assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] >= 1


def test_parses_as_an_engine_snapshot():
    engine = pytest.importorskip("scheduler.engine")
    objects = advanced(ticks=20).snapshot_objects()
    snapshot = engine.parse_snapshot(objects)
    assert len(snapshot.nodes) == 64
    assert len(snapshot.pods) == len(of_kind(objects, "Pod"))


def test_running_pods_fit_their_nodes_and_gangs_keep_their_rules():
    cluster = SimulatedCluster(nodes=32, seed=5)
    for _ in range(150):
        cluster.tick()
        objects = cluster.snapshot_objects()
        nodes = {n["metadata"]["name"]: n for n in of_kind(objects, "Node")}
        racks = {name: n["metadata"]["labels"][RACK_LABEL] for name, n in nodes.items()}
        used: dict[str, Counter] = defaultdict(Counter)
        groups = {
            f"{g['metadata']['namespace']}/{g['metadata']['name']}": g for g in of_kind(objects, "PodGroup")
        }
        for pod in of_kind(objects, "Pod"):
            group_key = f"{pod['metadata']['namespace']}/{pod['spec']['schedulingGroup']['podGroupName']}"
            assert group_key in groups, "every pod belongs to a PodGroup that exists"
            node = pod["spec"].get("nodeName")
            assert (pod["status"]["phase"] == "Running") == (node is not None)
            if node:
                assert "startTime" in pod["status"]
                for resource, value in pod["spec"]["containers"][0]["resources"]["requests"].items():
                    used[node][resource] += quantity(value)
        for name, counter in used.items():
            for resource, amount in counter.items():
                assert amount <= quantity(nodes[name]["status"]["allocatable"][resource]), (name, resource)
        for key, group in groups.items():
            members = pods_of(objects, key)
            bound = [p for p in members if p["spec"].get("nodeName")]
            if "all" in group["spec"]["disruptionMode"]:
                assert len(bound) in (0, len(members)), f"{key}: an all-or-nothing gang is half bound"
            if bound:
                assert len(bound) >= group["spec"]["schedulingPolicy"]["gang"]["minCount"]
            if group["spec"].get("schedulingConstraints") and bound:
                assert len({racks[p["spec"]["nodeName"]] for p in bound}) == 1, f"{key} spans racks"


def free_gpus(cluster: SimulatedCluster) -> int:
    return sum(owner is None for slots in cluster.device_holders().values() for owner in slots)


def waiting_podgroups(objects: list[dict]) -> list[dict]:
    return [
        g
        for g in of_kind(objects, "PodGroup")
        if not any(p["spec"].get("nodeName") for p in pods_of(objects, object_key(g)))
    ]


def test_device_holders_agree_with_the_snapshot():
    cluster = advanced(ticks=25)
    holders, objects = cluster.device_holders(), cluster.snapshot_objects()
    assert len(holders) == 64 and all(len(slots) == 8 for slots in holders.values())
    bound = {object_key(p): p for p in of_kind(objects, "Pod") if p["spec"].get("nodeName")}
    held: Counter = Counter()
    for node, slots in holders.items():
        for owner in filter(None, slots):
            assert bound[owner]["spec"]["nodeName"] == node, f"{owner} holds a GPU of a node it is not on"
            held[owner] += 1
    for key, pod in bound.items():
        assert held[key] == int(pod["spec"]["containers"][0]["resources"]["requests"][GPU]), key
    json.dumps(holders)


def test_the_generator_keeps_the_cluster_moving():
    cluster = SimulatedCluster(nodes=64, seed=7)
    kinds = Counter(change["type"] for _ in range(300) for change in cluster.tick())
    assert kinds["gang-submitted"] > 10 and kinds["gang-bound"] > 10 and kinds["gang-finished"] > 10
    assert 0.6 < (512 - free_gpus(cluster)) / 512 <= 1


# --- the write paths of the Cluster protocol ------------------------------------------------


def protected(objects) -> set[str]:
    """Names of the gangs a PodDisruptionBudget covers."""
    return {
        pdb["spec"]["selector"]["matchLabels"]["gangweb.io/gang"]
        for pdb in of_kind(objects, "PodDisruptionBudget")
    }


def running_pod_with_pdb(cluster: SimulatedCluster):
    objects = cluster.snapshot_objects()
    for pdb in of_kind(objects, "PodDisruptionBudget"):
        gang = pdb["spec"]["selector"]["matchLabels"]["gangweb.io/gang"]
        members = pods_of(objects, f"{pdb['metadata']['namespace']}/{gang}")
        if all(p["spec"].get("nodeName") for p in members) and len(members) > 1:
            return pdb, members
    raise AssertionError("no fully running gang with a PDB in this seed")


def test_evict_a_missing_pod_is_404():
    result = SimulatedCluster(nodes=8).evict("nowhere", "ghost")
    assert (result.code, result.ok, result.retryable) == (404, True, False)
    assert "not found" in result.message


def test_dry_run_eviction_changes_nothing():
    cluster = advanced(ticks=5)
    objects = cluster.snapshot_objects()
    pod = next(
        p
        for p in of_kind(objects, "Pod")
        if p["spec"].get("nodeName")
        and p["spec"]["schedulingGroup"]["podGroupName"] not in protected(objects)
    )
    before = cluster.snapshot_objects()
    result = cluster.evict(pod["metadata"]["namespace"], pod["metadata"]["name"], dry_run=True)
    assert result.ok and result.dry_run and result.code == 201
    assert cluster.snapshot_objects() == before


def test_evictions_and_deletions_name_the_pod_by_the_uid_its_object_shows():
    cluster = advanced(ticks=5)
    objects = cluster.snapshot_objects()
    victim, other = [
        p
        for p in of_kind(objects, "Pod")
        if p["spec"].get("nodeName")
        and p["spec"]["schedulingGroup"]["podGroupName"] not in protected(objects)
    ][:2]
    ns, name, uid = victim["metadata"]["namespace"], victim["metadata"]["name"], victim["metadata"]["uid"]
    stale = cluster.evict(ns, name, uid=other["metadata"]["uid"])
    assert stale.code == 409 and "UID" in stale.message and cluster.get_pod(ns, name) is not None
    assert cluster.delete_pod(ns, name, uid=other["metadata"]["uid"]).code == 409
    assert cluster.delete_pod(ns, name, uid=uid, dry_run=True).code == 200 and cluster.get_pod(ns, name)
    assert cluster.delete_pod(ns, name, uid=uid).code == 200 and cluster.get_pod(ns, name) is None
    other_ns, other_name = other["metadata"]["namespace"], other["metadata"]["name"]
    assert cluster.evict(other_ns, other_name, uid=other["metadata"]["uid"], dry_run=True).code in (201, 429)


def test_eviction_frees_the_gpus_and_the_controller_recreates_the_gang():
    cluster = advanced(ticks=5)
    objects = cluster.snapshot_objects()
    group = next(
        g
        for g in of_kind(objects, "PodGroup")
        if "all" in g["spec"]["disruptionMode"]
        and g["metadata"]["name"] not in protected(objects)
        and all(p["spec"].get("nodeName") for p in pods_of(objects, object_key(g)))
    )
    key = object_key(group)
    members = pods_of(objects, key)
    free_before = free_gpus(cluster)
    for pod in members:
        assert cluster.evict(pod["metadata"]["namespace"], pod["metadata"]["name"]).code == 201
        assert cluster.get_pod(pod["metadata"]["namespace"], pod["metadata"]["name"]) is None
    gpus = sum(int(p["spec"]["containers"][0]["resources"]["requests"][GPU]) for p in members)
    assert free_gpus(cluster) == free_before + gpus
    changes = cluster.tick()
    assert {"type": "pod-evicted", "podGroup": key}.items() <= changes[0].items()
    assert any(c["type"] == "gang-restarted" and c["podGroup"] == key for c in changes)
    replacements = pods_of(cluster.snapshot_objects(), key)
    assert len(replacements) == len(members)
    assert not {p["metadata"]["name"] for p in replacements} & {p["metadata"]["name"] for p in members}


def object_key(obj) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def test_pdb_blocks_evictions_once_its_budget_is_spent():
    cluster = advanced(ticks=5)
    pdb, members = running_pod_with_pdb(cluster)
    allowed = pdb["status"]["disruptionsAllowed"]
    assert allowed == pdb["status"]["currentHealthy"] - pdb["spec"]["minAvailable"]
    answers = [cluster.evict(p["metadata"]["namespace"], p["metadata"]["name"]).code for p in members]
    assert answers[:allowed] == [201] * allowed
    assert answers[allowed] == 429
    blocked = cluster.evict(
        members[-1]["metadata"]["namespace"], members[-1]["metadata"]["name"], dry_run=True
    )
    assert blocked.code == 429 and blocked.retryable and not blocked.ok
    assert "disruption budget" in blocked.message
    refreshed = next(
        o
        for o in of_kind(cluster.snapshot_objects(), "PodDisruptionBudget")
        if o["metadata"]["name"] == pdb["metadata"]["name"]
    )
    assert refreshed["status"]["disruptionsAllowed"] == 0


def test_conditions_and_events_are_recorded():
    cluster = advanced(ticks=3)
    objects = cluster.snapshot_objects()
    pod = next(p for p in of_kind(objects, "Pod") if p["spec"].get("nodeName"))
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    cluster.mark_disruption_target(ns, name, "preempted to place team-a/big")
    condition = next(
        c for c in cluster.get_pod(ns, name)["status"]["conditions"] if c["type"] == "DisruptionTarget"
    )
    assert (condition["status"], condition["reason"]) == ("True", "PreemptionByScheduler")
    group = of_kind(objects, "PodGroup")[0]
    cluster.set_podgroup_condition(
        group["metadata"]["namespace"],
        group["metadata"]["name"],
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
        "evicted as a whole",
    )
    conditions = next(
        g
        for g in of_kind(cluster.snapshot_objects(), "PodGroup")
        if g["metadata"]["name"] == group["metadata"]["name"]
    )["status"]["conditions"]
    assert any(c["type"] == "DisruptionTarget" and c["message"] == "evicted as a whole" for c in conditions)
    event = ClusterEvent(ns, "Pod", name, "Preempted", "by team-a/big")
    cluster.record_event(event)
    assert cluster.events()[-1] == event
    assert any(c["type"] == "event" and c["reason"] == "Preempted" for c in cluster.tick())
    # Writes to objects that are gone are no-ops, not errors (the pipeline may race a finishing gang).
    cluster.mark_disruption_target("nowhere", "ghost", "x")
    cluster.set_podgroup_condition("nowhere", "ghost", "DisruptionTarget", "True", "r", "m")


def test_a_plan_replayed_on_the_simulation_places_the_waiting_gang():
    engine = pytest.importorskip("scheduler.engine")
    cluster = SimulatedCluster(nodes=64, seed=7)
    objects = cluster.snapshot_objects()
    pending = waiting_podgroups(objects)
    assert pending, "seed 7 starts with gangs waiting"
    waiting = {"podGroup": object_key(max(pending, key=lambda g: g["spec"]["priority"]))}
    plan = engine.plan(engine.parse_snapshot(objects), waiting["podGroup"]).to_dict()
    assert plan["feasible"] and plan["evictions"]
    for key in plan["evictions"]:
        assert cluster.evict(*split_key(key), dry_run=True).ok
    for key in plan["evictions"]:
        assert cluster.evict(*split_key(key)).code == 201
    changes = cluster.tick()
    assert any(c["type"] == "gang-bound" and c["podGroup"] == waiting["podGroup"] for c in changes)
    assert all(p["spec"].get("nodeName") for p in pods_of(cluster.snapshot_objects(), waiting["podGroup"]))


def test_concurrent_callers_see_a_consistent_cluster():
    cluster = SimulatedCluster(nodes=32, seed=9)
    errors: list[BaseException] = []

    def ticker():
        for _ in range(100):
            cluster.tick()

    def reader():
        for _ in range(100):
            # One read is one moment: no pod holds GPUs on two nodes at once.
            nodes_of: dict[str, set[str]] = defaultdict(set)
            for node, slots in cluster.device_holders().items():
                for owner in filter(None, slots):
                    nodes_of[owner].add(node)
            assert all(len(nodes) == 1 for nodes in nodes_of.values())

    def evictor():
        for _ in range(50):
            pods = [p for p in of_kind(cluster.snapshot_objects(), "Pod") if p["spec"].get("nodeName")]
            if pods:
                cluster.evict(pods[0]["metadata"]["namespace"], pods[0]["metadata"]["name"])

    def guarded(fn):
        def run():
            try:
                fn()
            except BaseException as exc:
                errors.append(exc)

        return run

    threads = [threading.Thread(target=guarded(fn)) for fn in (ticker, reader, evictor, reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_rejects_an_empty_cluster():
    with pytest.raises(ValueError, match="at least one node"):
        SimulatedCluster(nodes=0)
