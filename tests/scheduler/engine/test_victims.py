"""Victim units, importance order and PDB budget consumption (KEP-5710 section 3.3)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine import parse_snapshot
from scheduler.engine.builders import node, pdb, pod, podgroup


def _units(snap):
    return [(u.kind, u.name, u.priority, [snap.pods[p].name for p in u.pods]) for u in snap.units.units]


def test_all_group_is_one_unit_cluster_wide_and_single_pods_stand_alone():
    snap = parse_snapshot(
        [
            node("n1"),
            node("n2"),
            podgroup("whole", mode="all", priority=10, min_count=2),
            pod("whole-0", node="n1", group="whole"),
            pod("whole-1", node="n2", group="whole"),
            podgroup("loose", mode="single", priority=10, min_count=2),
            pod("loose-0", node="n1", group="loose"),
            pod("loose-1", node="n2", group="loose"),
            pod("pending", group="whole"),
        ]
    )
    units = _units(snap)
    assert ("PodGroup", "whole", 10, ["whole-0", "whole-1"]) in units
    assert ("Pod", "loose-0", 10, ["loose-0"]) in units and ("Pod", "loose-1", 10, ["loose-1"]) in units
    assert len(units) == 3
    whole = next(u for u in snap.units.units if u.name == "whole")
    assert sorted(whole.node_req) == [0, 1]


def test_highest_all_ancestor_wins_through_composite_groups():
    snap = parse_snapshot(
        [
            node("n1"),
            podgroup("root", kind="CompositePodGroup", mode="all", priority=7),
            podgroup("middle", kind="CompositePodGroup", mode="single", parent="root"),
            podgroup("leaf-a", mode="all", parent="middle"),
            podgroup("leaf-b", mode="single", parent="middle"),
            pod("a-0", node="n1", group="leaf-a"),
            pod("b-0", node="n1", group="leaf-b"),
        ]
    )
    assert _units(snap) == [("CompositePodGroup", "root", 7, ["a-0", "b-0"])]


def test_parent_cycles_do_not_hang():
    snap = parse_snapshot(
        [
            node("n1"),
            podgroup("x", kind="CompositePodGroup", mode="all", parent="y", priority=1),
            podgroup("y", kind="CompositePodGroup", mode="single", parent="x", priority=1),
            podgroup("leaf", mode="single", parent="x"),
            pod("p", node="n1", group="leaf"),
        ]
    )
    assert _units(snap)[0][0] == "CompositePodGroup"


def test_importance_order_priority_rank_size_age_uid():
    snap = parse_snapshot(
        [
            node("n1", pods=200),
            pod("low", node="n1", priority=1),
            pod("bare-old", node="n1", priority=5, start="2026-06-01T00:00:00Z"),
            podgroup("sg", mode="single", priority=5),
            pod("in-single-group", node="n1", group="sg", start="2026-06-30T00:00:00Z"),
            podgroup("small", mode="all", priority=5),
            pod("small-0", node="n1", group="small"),
            podgroup("big", mode="all", priority=5),
            pod("big-0", node="n1", group="big"),
            pod("big-1", node="n1", group="big"),
            pod("bare-new", node="n1", priority=5, start="2026-06-15T00:00:00Z"),
            pod("bare-unstarted", node="n1", priority=5, start=None),
            pod("bare-same-a", node="n1", priority=5, start="2026-06-20T00:00:00Z", uid="a"),
            pod("bare-same-b", node="n1", priority=5, start="2026-06-20T00:00:00Z", uid="b"),
        ]
    )
    names = [u.name for u in snap.units.units]
    # Same priority: groups (bigger first); a pod of a single-mode group is typed PodGroup (the KEP's
    # quirk), so it ranks with one-pod groups (older first) and above bare pods; bare pods oldest
    # first, unstarted last, then UID.
    assert names == [
        "big",
        "in-single-group",
        "small",
        "bare-old",
        "bare-new",
        "bare-same-a",
        "bare-same-b",
        "bare-unstarted",
        "low",
    ]


def test_pdb_budget_is_consumed_in_importance_order():
    snap = parse_snapshot(
        [
            node("n1"),
            pod("older", node="n1", priority=5, labels={"app": "db"}, start="2026-06-01T00:00:00Z"),
            pod("newer", node="n1", priority=5, labels={"app": "db"}, start="2026-06-02T00:00:00Z"),
            pod("other", node="n1", priority=5, labels={"app": "web"}, start="2026-06-03T00:00:00Z"),
            pdb("db", match_labels={"app": "db"}, allowed=1),
        ]
    )
    counts = dict(zip((u.name for u in snap.units.units), snap.units.violations(100).tolist()))
    assert counts == {"older": 0, "newer": 1, "other": 0}
    # a preemptor at priority 5 may not touch them, so nothing is consumed
    assert snap.units.violations(5).tolist() == [0, 0, 0]


def test_pdb_selectors_nil_matches_nothing_empty_matches_all_and_disrupted_pods_skip():
    snap = parse_snapshot(
        [
            node("n1"),
            pod("a", node="n1", priority=1, labels={"x": "1"}),
            pod("b", node="n1", priority=1),
            pdb("none", selector=None),
            pdb("every", selector={}, allowed=1),
        ]
    )
    pods = {snap.pods[p].name: [snap.pdbs[i].key for i in pdbs] for p, pdbs in snap.units.pod_pdbs.items()}
    assert pods == {"a": ["default/every"], "b": ["default/every"]}
    disrupted = pdb("every", selector={}, allowed=0)
    disrupted["status"]["disruptedPods"] = {"a": "2026-07-01T00:00:00Z"}
    snap = parse_snapshot([node("n1"), pod("a", node="n1"), pod("b", node="n1"), disrupted])
    assert [snap.pods[p].name for p in snap.units.pod_pdbs] == ["b"]


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False))
def test_units_hold_the_sums_of_their_own_pods_on_each_node(rng):
    """Whatever the cluster, each unit's figures are those of its own pods (the index builds them in numpy)."""
    nodes = [node(f"n{i}", gpus=8) for i in range(rng.randint(1, 6))]
    groups = [
        podgroup(f"g{i}", mode=rng.choice(["all", "single"]), priority=rng.choice([1, 5, 9]), min_count=1)
        for i in range(rng.randint(0, 4))
    ]
    pods = []
    for i in range(rng.randint(0, 25)):
        names = [g["metadata"]["name"] for g in groups] + ["missing"]  # a group not in the snapshot too
        group = rng.choice(names) if rng.random() < 0.7 else None
        hour = rng.choice([None, "01", "05", "11"])
        pods.append(
            pod(
                f"p{i}",
                node=rng.choice(nodes)["metadata"]["name"] if rng.random() < 0.8 else None,
                gpus=rng.choice([0, 1, 2, 4]),
                cpu=str(rng.randint(1, 4)),
                group=group,
                priority=rng.choice([1, 5, 9]),
                start=f"2026-07-01T{hour}:00:00Z" if hour else None,
                uid=f"uid-{rng.randrange(1000):03d}-{i}",
            )
        )
    snap = parse_snapshot(nodes + groups + pods)
    index = snap.units
    gpus = snap.gpus(snap.pod_req).tolist()
    assert sorted(p for u in index.units for p in u.pods) == snap.bound.tolist()
    for unit in index.units:
        assert unit.pods == sorted(unit.pods) and index.pod_unit[unit.pods].tolist() == [unit.index] * len(
            unit.pods
        )
        assert unit.gpus == sum(gpus[p] for p in unit.pods)
        pod_ = snap.pods[unit.pods[0]]
        group = snap.group_of(pod_)
        assert unit.priority == (snap.effective_group_priority(group) if group else pod_.priority)
        starts = [snap.pods[p].start_time for p in unit.pods if snap.pods[p].start_time is not None]
        assert unit.earliest_start == (min(starts) if starts else None)
        assert unit.tiebreak == min(snap.pods[p].uid for p in unit.pods)
        lost = [gpus[p] * (snap.now - t) for p in unit.pods if (t := snap.pods[p].start_time) is not None]
        assert snap.units.gpu_seconds[unit.index] == pytest.approx(sum(lost))
        by_node: dict[int, list[int]] = {}
        for p in unit.pods:  # in the order the unit's pods first reach each node
            by_node.setdefault(int(snap.pod_node[p]), []).append(p)
        assert list(unit.node_req) == list(by_node) == list(unit.node_req_t)
        for n, members in by_node.items():
            assert (
                unit.node_req[n].tolist()
                == list(unit.node_req_t[n])
                == snap.pod_req[members].sum(axis=0).tolist()
            )
            assert unit.index in index.node_units[n]
    assert [u.importance_key() for u in index.units] == sorted(u.importance_key() for u in index.units)
    rows = list(zip(index.entry_node.tolist(), index.entry_unit.tolist()))
    assert rows == sorted((n, u.index) for u in index.units for n in u.node_req)
    for n in range(len(snap.nodes)):
        span = slice(index.entry_start[n], index.entry_start[n + 1])
        assert index.entry_unit[span].tolist() == index.node_units[n] == sorted(index.node_units[n])
        assert index.entry_req[span].sum(axis=0).tolist() == snap.used[n].tolist()
