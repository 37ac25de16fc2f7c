"""Plans gangweb used to miss against the proven optimum (issue 14): a greedy reprieval that gives back the
most important unit first, and a pod that took a node by evicting a cheap unit that a later eviction made
needless."""

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pdb, pod, podgroup


def _gang(count, gpus):
    return [podgroup("hi", min_count=count, priority=100, mode="all")] + [
        pod(f"hi-{i}", group="hi", gpus=gpus) for i in range(count)
    ]


def test_on_each_node_the_cheapest_victim_set_is_found_not_the_greedy_one():
    objects = [
        node("n0", gpus=8),
        node("n1", gpus=4),
        node("n2", gpus=4),
        podgroup("v0", priority=10, min_count=1),
        pod("v0-0", node="n2", gpus=2, group="v0", start="2026-06-26T00:00:00Z"),
        pod("v0-1", node="n0", gpus=4, group="v0", start="2026-06-28T00:00:00Z"),
        pod("v0-2", node="n1", gpus=1, group="v0", start="2026-06-17T00:00:00Z"),
        pod("v0-3", node="n0", gpus=1, group="v0", start="2026-06-28T00:00:00Z"),
        podgroup("v1", priority=1, mode="all", min_count=1),
        pod("v1-0", node="n2", gpus=2, group="v1", start="2026-06-26T00:00:00Z"),
        podgroup("v2", priority=1, min_count=1),
        pod("v2-0", node="n1", gpus=1, group="v2", start="2026-06-22T00:00:00Z"),
        pod("v2-1", node="n0", gpus=2, group="v2", start="2026-06-17T00:00:00Z"),
        pod("v2-3", node="n1", gpus=2, group="v2", start="2026-06-10T00:00:00Z"),
    ] + _gang(1, 4)
    result = plan(parse_snapshot(objects), "default/hi")
    # On n0, giving v0-1 back first (the most important) keeps v0-3 and v2-1 evicted: priority sum 11.
    assert result.evictions == ["default/v0-1"]
    assert tuple(result.cost)[:5] == (0, 10, 10, 1, 1)


def test_victims_a_later_eviction_made_needless_are_given_back():
    objects = [
        node("n0", gpus=4, labels={"rack": "r0"}),
        node("n1", gpus=8, labels={"rack": "r1"}),
        node("n2", gpus=4, labels={"rack": "r0"}),
        node("n3", gpus=8, labels={"rack": "r1"}),
        node("n4", gpus=8, labels={"rack": "r0"}),
        podgroup("v0", priority=5, min_count=1),
        pod("v0-0", node="n3", gpus=4, group="v0", start="2026-06-21T00:00:00Z"),
        podgroup("v1", priority=50, mode="all", min_count=1),
        pod("v1-0", node="n0", gpus=2, group="v1", start="2026-06-20T00:00:00Z"),
        pod("v1-1", node="n4", gpus=1, group="v1", start="2026-06-18T00:00:00Z"),
        pod("v1-2", node="n4", gpus=4, group="v1", start="2026-06-06T00:00:00Z"),
        pod("bare0", node="n1", gpus=8, priority=50, labels={"app": "bare"}, start="2026-06-05T00:00:00Z"),
        pdb("guard", match_labels={"app": "bare"}, allowed=1),
    ] + _gang(4, 4)
    result = plan(parse_snapshot(objects), "default/hi")
    # bare0's 8 GPUs hold two gang pods; the two others fit in free room. One pod evicted, not three.
    assert result.evictions == ["default/bare0"]
    assert tuple(result.cost)[:5] == (0, 50, 50, 1, 1)
