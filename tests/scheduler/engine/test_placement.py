"""Node filters and placement, through plan() (what users see) and node_mask (the unit)."""

import pytest

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.placement import node_mask


def _gang(*nodes, spec=None, gpus=8, count=1, **group):
    objects = list(nodes) + [podgroup("g", min_count=count, priority=100, **group)]
    objects += [pod(f"g-{i}", group="g", gpus=gpus, spec=spec) for i in range(count)]
    return parse_snapshot(objects)


def _placed_on(snap, policy="gangweb"):
    result = plan(snap, "default/g", policy)
    return result.feasible, sorted(set(result.placement.values()))


def test_not_ready_and_cordoned_nodes_are_not_targets():
    snap = _gang(node("a-down", ready=False), node("b-cordoned", cordoned=True), node("c-ok"))
    assert _placed_on(snap) == (True, ["c-ok"])


def test_taints_block_unless_tolerated():
    tainted = node("a", taints=[{"key": "gpu", "value": "h100", "effect": "NoSchedule"}])
    prefer = node("b", taints=[{"key": "soft", "effect": "PreferNoSchedule"}])
    assert _placed_on(_gang(tainted, prefer)) == (True, ["b"])
    only_tainted = node("c", taints=[{"key": "gpu", "value": "h100", "effect": "NoExecute"}])
    assert _placed_on(_gang(only_tainted))[0] is False
    tolerating = {
        "tolerations": [{"key": "gpu", "operator": "Equal", "value": "h100", "effect": "NoExecute"}]
    }
    assert _placed_on(_gang(only_tainted, spec=tolerating)) == (True, ["c"])
    wildcard = {"tolerations": [{"operator": "Exists"}]}
    assert _placed_on(_gang(only_tainted, spec=wildcard)) == (True, ["c"])


def test_node_selector():
    snap = _gang(
        node("a", labels={"gpu": "a100"}),
        node("b", labels={"gpu": "h100"}),
        spec={"nodeSelector": {"gpu": "h100"}},
    )
    assert _placed_on(snap) == (True, ["b"])


@pytest.mark.parametrize(
    "expression, expected",
    [
        ({"key": "gpu", "operator": "In", "values": ["h100", "b200"]}, ["b", "c"]),
        ({"key": "gpu", "operator": "NotIn", "values": ["h100"]}, ["a", "c", "d"]),
        ({"key": "gpu", "operator": "Exists"}, ["a", "b", "c"]),
        ({"key": "gpu", "operator": "DoesNotExist"}, ["d"]),
        ({"key": "mem", "operator": "Gt", "values": ["80"]}, ["b", "c"]),
        ({"key": "mem", "operator": "Lt", "values": ["100"]}, ["a", "b"]),
    ],
)
def test_required_node_affinity_operators(expression, expected):
    nodes = [
        node("a", labels={"gpu": "a100", "mem": "40"}),
        node("b", labels={"gpu": "h100", "mem": "96"}),
        node("c", labels={"gpu": "b200", "mem": "192"}),
        node("d", labels={"mem": "x"}),
    ]
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
        }
    }
    snap = _gang(*nodes, spec=spec)
    mask = node_mask(snap, snap.pods[0])
    assert [n.name for n, ok in zip(snap.nodes, mask) if ok] == expected


def test_affinity_terms_are_ored_and_match_fields_use_node_name():
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]},
                    ]
                }
            }
        }
    }
    snap = _gang(node("a"), node("b", labels={"zone": "z1"}), node("c", labels={"zone": "z2"}), spec=spec)
    assert [n.name for n, ok in zip(snap.nodes, node_mask(snap, snap.pods[0])) if ok] == ["a", "c"]


def test_resources_checked_include_extended_and_pod_count():
    snap = parse_snapshot(
        [
            node("a", gpus=8, pods=1),
            node("b", gpus=4),
            node("c", gpus=8),
            pod("x", node="a", gpus=0, priority=1000),
            podgroup("g", min_count=1, priority=100),
            pod("g-0", group="g", gpus=8),
        ]
    )
    # a is full by pod count, b lacks GPUs: only c fits.
    assert _placed_on(snap) == (True, ["c"])


def test_host_ports_conflict():
    ported = {
        "containers": [
            {
                "name": "c",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"cpu": "1"}},
            }
        ]
    }
    snap = parse_snapshot(
        [
            node("a"),
            node("b"),
            pod("holder", node="a", spec=ported, priority=1000),
            podgroup("g", min_count=1, priority=100),
            pod("g-0", group="g", spec=ported),
        ]
    )
    assert _placed_on(snap) == (True, ["b"])


def test_topology_keeps_the_gang_in_one_domain():
    nodes = [node(f"n{i}", labels={"rack": f"r{i // 2}"}, gpus=8) for i in range(6)]
    # rack r0 has one free node only; r1 fully free
    snap = parse_snapshot(
        nodes
        + [
            pod("busy", node="n0", gpus=8, priority=1000),
            podgroup("g", min_count=2, priority=100, topology="rack"),
        ]
        + [pod(f"g-{i}", group="g", gpus=8) for i in range(2)]
    )
    result = plan(snap, "default/g")
    assert result.feasible and result.domain == "r1"
    assert sorted(result.placement.values()) == ["n2", "n3"]


def test_running_members_pin_the_domain():
    nodes = [node(f"n{i}", labels={"rack": f"r{i // 2}"}, gpus=8) for i in range(4)]
    snap = parse_snapshot(
        nodes
        + [
            podgroup("g", min_count=2, priority=100, topology="rack"),
            pod("g-0", group="g", gpus=8, node="n3"),
            pod("g-1", group="g", gpus=8),
        ]
    )
    result = plan(snap, "default/g")
    assert result.domain == "r1" and result.placement == {"default/g-1": "n2"}


def test_topology_label_missing_everywhere_is_infeasible_with_reason():
    snap = _gang(node("a"), topology="rack")
    result = plan(snap, "default/g")
    assert not result.feasible and "rack" in result.reason


def test_least_allocated_spreads_and_ties_go_to_the_first_node():
    snap = parse_snapshot(
        [
            node("a", cpu="64"),
            node("b", cpu="64"),
            pod("x", node="a", cpu="32", priority=1000),
            podgroup("g", min_count=2, priority=100),
        ]
        + [pod(f"g-{i}", group="g", gpus=1, cpu="1") for i in range(2)]
    )
    result = plan(snap, "default/g", "kep5710")
    assert result.placement == {"default/g-0": "b", "default/g-1": "b"}
    empty = parse_snapshot(
        [node("a"), node("b"), podgroup("g", min_count=1, priority=1), pod("g-0", group="g")]
    )
    assert plan(empty, "default/g").placement == {"default/g-0": "a"}
