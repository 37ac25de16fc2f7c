"""The brute-force optimum used to grade plans, and what the grading says."""

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.evaluation import Problem
from scheduler.engine.preemptor import Preemptor
from testkit.quality import optimum, study


def test_optimum_finds_the_single_cheap_unit_the_greedy_placement_misses():
    # Two 2-GPU pods: evicting the lone 4-GPU pod on n1 makes room for both; a pod-by-pod greedy
    # placement first grabs n0 (its cheapest victim has priority 1) and then needs a second victim.
    snap = parse_snapshot(
        [
            node("n0", gpus=4),
            node("n1", gpus=4),
            pod("bare0", node="n0", gpus=1, priority=1),
            pod("v0-1", node="n0", gpus=2, priority=5),
            pod("v0-0", node="n1", gpus=4, priority=5),
            podgroup("hi", min_count=2, priority=100, mode="all"),
        ]
        + [pod(f"hi-{i}", group="hi", gpus=2) for i in range(2)]
    )
    best = optimum(Problem(snap, Preemptor(snap, "default/hi")))
    assert best[:5] == (0, 5, 5, 1, 1)
    assert plan(snap, "default/hi", "gangweb").cost == best
    assert plan(snap, "default/hi", "kep5710").cost > best


def test_gangweb_is_optimal_at_least_as_often_as_kep5710():
    found = study(40, seed=9)
    assert found["samples"] == 40
    for marks in found["policies"].values():
        assert marks["optimal"] + marks["worse"] + marks["short"] == 40
    assert found["policies"]["gangweb"]["optimal"] >= found["policies"]["kep5710"]["optimal"]
    assert found["policies"]["gangweb"]["short"] == 0
