"""A fan-out shard planning its sub-snapshot reaches the plan the whole snapshot gives for its domains."""

from __future__ import annotations

import re

import pytest

from scheduler.engine import best_plan, domain_shards, parse_snapshot, plan
from scheduler.engine.builders import node, pdb, pod, podgroup
from scheduler.engine.subsnapshot import SnapshotCutter, parse_cut
from scheduler.engine.synthetic import NAMESPACE, preemptor_name, synthetic_cluster

COUNTS = re.compile(r"cheapest of \d+ candidate plans? over \d+ domains?")


def entangled_cluster(nodes: int, seed: int) -> list[dict]:
    """The benchmark's cluster, plus victims that reach far beyond one rack: CompositePodGroups
    (``all`` trees, one under a ``single`` root) gathering PodGroups from everywhere, and
    PodDisruptionBudgets shared across many jobs."""
    objects = synthetic_cluster(nodes, seed=seed)
    groups = [
        o for o in objects if o["kind"] == "PodGroup" and not o["metadata"]["name"].startswith("preemptor")
    ]
    for position, group in enumerate(groups):
        if position % 7 == 0:
            group["spec"]["parentCompositePodGroupName"] = f"tree-{position % 3}"
    objects += [
        podgroup("forest", namespace=NAMESPACE, priority=100, mode="single", kind="CompositePodGroup"),
        podgroup(
            "tree-0", namespace=NAMESPACE, priority=100, mode="all", parent="forest", kind="CompositePodGroup"
        ),
        podgroup("tree-1", namespace=NAMESPACE, priority=200, mode="all", kind="CompositePodGroup"),
        podgroup("tree-2", namespace=NAMESPACE, priority=100, mode="single", kind="CompositePodGroup"),
    ]
    for position, obj in enumerate(o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")):
        obj["metadata"]["labels"]["team"] = f"team-{position % 5}"
    objects += [
        pdb(f"team-{t}", namespace=NAMESPACE, match_labels={"team": f"team-{t}"}, allowed=3 + t)
        for t in range(5)
    ]
    return objects


# (generator, nodes, seed, preemptor GPUs): racks of 16 nodes for 64 GPUs, blocks of 256 for 256.
CASES = [
    ("synthetic", 256, 1, 64),
    ("synthetic", 512, 3, 64),
    ("synthetic", 1024, 4, 64),
    ("synthetic", 1024, 4, 256),
    ("entangled", 256, 2, 64),
    ("entangled", 512, 6, 64),
    ("entangled", 1024, 8, 64),
    ("entangled", 1024, 9, 256),
]


def cluster(kind: str, nodes: int, seed: int) -> list[dict]:
    return synthetic_cluster(nodes, seed=seed) if kind == "synthetic" else entangled_cluster(nodes, seed)


@pytest.mark.parametrize("kind, nodes, seed, gpus", CASES)
def test_each_shard_plans_the_same_on_its_cut_and_the_merge_is_the_in_process_plan(kind, nodes, seed, gpus):
    objects = cluster(kind, nodes, seed)
    whole = parse_snapshot(objects)
    podgroup_name = preemptor_name(gpus)
    shards = [s for s in domain_shards(whole, podgroup_name, 3) if s]
    assert len(shards) > 1, "the case must spread over several shards"
    cutter = SnapshotCutter(whole, objects, podgroup_name)
    shard_plans = []
    for shard in shards:
        cut = cutter.cut(shard)
        assert len(cut["objects"]) < len(objects)
        expected = plan(whole, podgroup_name, "gangweb", domains=shard)
        got = plan(parse_cut(cut), podgroup_name, "gangweb", domains=shard)
        assert got.to_dict() == expected.to_dict()
        assert got.cost == expected.cost
        shard_plans.append(got)
    merged_plan = best_plan(shard_plans)
    merged, in_process = merged_plan.to_dict(), plan(whole, podgroup_name, "gangweb")
    assert in_process.feasible and in_process.victims, "the case must need preemption"
    if merged["domain"] != in_process.domain:
        # The one way the fan-out departs from one process: the in-process walk gave up (PATIENCE
        # domains in a row without a better plan) before the domain where a shard found a cheaper one.
        evaluated = int(re.search(r"over (\d+) domains?", in_process.reason).group(1))
        ranked = domain_shards(whole, podgroup_name, 1)[0]
        assert ranked.index(merged["domain"]) >= evaluated
        assert best_plan([in_process, merged_plan]) is merged_plan and merged_plan.rank < in_process.rank
        return
    expected = in_process.to_dict()
    # The reason counts the candidates the deciding shard looked at, not every shard's.
    assert COUNTS.sub("", merged.pop("reason")) == COUNTS.sub("", expected.pop("reason"))
    assert merged == expected


def test_the_cut_of_an_all_mode_tree_keeps_its_far_pods_and_their_nodes_outside_the_domains():
    objects = entangled_cluster(512, 6)
    whole = parse_snapshot(objects)
    podgroup_name = preemptor_name(64)
    cutter = SnapshotCutter(whole, objects, podgroup_name)
    rack = "rack-0000"
    sub = parse_cut(cutter.cut([rack]))
    racks = {n.labels.get("rack") for n in sub.nodes}
    # Nodes of far pods come along without the label: they can never become a (partial) domain.
    assert None in racks and racks - {None} <= {rack, *cutter.anchors}
    tree = next(u for u in whole.units.units if u.key == f"{NAMESPACE}/tree-1")
    touching = {whole.nodes[n].labels["rack"] for n in tree.node_req}
    assert len(touching) > 1, "the tree must span racks"
    if rack in touching:
        cut_tree = next(u for u in sub.units.units if u.key == tree.key)
        assert len(cut_tree.pods) == len(tree.pods)
        assert cut_tree.gpu_seconds == tree.gpu_seconds  # priced at the whole snapshot's "now"


def test_pods_on_nodes_missing_from_a_snapshot_are_ignored_so_cuts_carry_those_nodes():
    objects = [
        node("n1", labels={"rack": "a"}),
        node("n2", labels={"rack": "b"}),
        podgroup("job", mode="all", priority=10),
        pod("job-0", node="n1", gpus=8, group="job"),
        pod("job-1", node="n2", gpus=8, group="job"),
    ]
    without_n2 = parse_snapshot([o for o in objects if o["metadata"]["name"] != "n2"])
    assert [len(u.pods) for u in without_n2.units.units] == [1]
    assert "bound to nodes missing from the snapshot" in without_n2.warnings[0]
    whole = parse_snapshot(
        objects
        + [
            podgroup("p", mode="all", min_count=1, priority=100, topology="rack"),
            pod("p-0", gpus=8, group="p"),
        ]
    )
    objects += [
        podgroup("p", mode="all", min_count=1, priority=100, topology="rack"),
        pod("p-0", gpus=8, group="p"),
    ]
    sub = parse_cut(SnapshotCutter(whole, objects, "default/p").cut(["a"]))
    assert [len(u.pods) for u in sub.units.units] == [2] and not sub.warnings
