"""gangweb's exact search: the plans its heuristic gets wrong, and what a plan says about being the cheapest."""

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pdb, pod, podgroup
from scheduler.engine.contract import OPTIMALITY
from scheduler.engine.evaluation import Problem
from scheduler.engine.policies.gangweb import exact
from scheduler.engine.preemptor import Preemptor
from testkit.quality import MAX_UNITS, _exact_fit, optimum, small_cluster


def _gang(count, gpus, topology=None):
    return [podgroup("hi", min_count=count, priority=100, mode="all", topology=topology)] + [
        pod(f"hi-{i}", group="hi", gpus=gpus) for i in range(count)
    ]


def _three_pods_or_one():
    # Rack r0 has room once v0 goes (3 pods, priority 10); rack r1 once bare0 goes (1 pod, priority 10).
    return [
        node("n0", gpus=4, labels={"rack": "r0"}),
        node("n1", gpus=8, labels={"rack": "r1"}),
        node("n2", gpus=8, labels={"rack": "r0"}),
        node("n3", gpus=4, labels={"rack": "r1"}),
        podgroup("v0", priority=10, mode="all", min_count=1),
        pod("v0-0", node="n2", gpus=4, group="v0", start="2026-06-11T00:00:00Z"),
        pod("v0-1", node="n2", gpus=1, group="v0", start="2026-06-11T00:00:00Z"),
        pod("v0-2", node="n0", gpus=1, group="v0", start="2026-06-18T00:00:00Z"),
        pod("bare0", node="n1", gpus=8, priority=10, start="2026-06-09T00:00:00Z"),
        pod("bare1", node="n0", gpus=2, priority=1, start="2026-06-01T00:00:00Z"),
        pod("bare2", node="n3", gpus=4, priority=5, start="2026-06-19T00:00:00Z"),
    ] + _gang(3, 2, topology="rack")


def _one_budget_more():
    # Four 4-GPU pods need three more slots; bare0 + bare3 make them but spend two of the one disruption
    # the "bare" budget allows; bare3 + v0-0 (a higher priority sum) spend one.
    return [
        node("n0", gpus=8),
        node("n1", gpus=4),
        node("n2", gpus=8),
        node("n3", gpus=8),
        podgroup("v0", priority=10, min_count=1),
        pod("v0-0", node="n3", gpus=2, group="v0", start="2026-06-10T00:00:00Z"),
        pod("bare0", node="n2", gpus=2, priority=5, labels={"app": "bare"}, start="2026-06-20T00:00:00Z"),
        pod("bare1", node="n1", gpus=1, priority=5, labels={"app": "bare"}, start="2026-06-09T00:00:00Z"),
        pod("bare2", node="n3", gpus=4, priority=10, labels={"app": "bare"}, start="2026-06-12T00:00:00Z"),
        pod("bare3", node="n0", gpus=8, priority=10, labels={"app": "bare"}, start="2026-06-14T00:00:00Z"),
        pdb("guard", match_labels={"app": "bare"}, allowed=1),
    ] + _gang(4, 4)


def _optimum(snap):
    return optimum(Problem(snap, Preemptor(snap, "default/hi")))


def test_a_one_pod_unit_makes_room_where_the_heuristic_evicted_three_pods_of_the_same_priority():
    snap = parse_snapshot(_three_pods_or_one())
    result = plan(snap, "default/hi")
    assert result.evictions == ["default/bare0"] and result.domain == "r1"
    assert tuple(result.cost) == _optimum(snap) and tuple(result.cost)[:5] == (0, 10, 10, 1, 1)
    assert result.optimality == "proven" and result.to_dict()["optimality"] == "proven"
    # The heuristic alone settled for the 3-pod unit; the exact search found the 1-pod one.
    assert (
        "cheaper than the heuristic's plan, which evicted 1 unit (3 pods, highest priority 10"
        in result.reason
    )


def test_the_plan_breaks_no_more_disruption_budgets_than_needed():
    snap = parse_snapshot(_one_budget_more())
    result = plan(snap, "default/hi")
    assert result.evictions == ["default/bare3", "default/v0-0"]
    assert result.pdb_violations == 0 and tuple(result.cost)[:5] == (0, 10, 20, 2, 2)
    assert tuple(result.cost) == _optimum(snap) and result.optimality == "proven"
    assert (
        "cheaper than the heuristic's plan, which evicted 2 units (2 pods, highest priority 10, 1 PDB violation)"
        in (result.reason)
    )


def test_kep5710_stays_the_keps_evaluator_and_says_its_plan_is_not_searched():
    snap = parse_snapshot(_three_pods_or_one())
    result = plan(snap, "default/hi", "kep5710")
    assert result.feasible and result.cost > plan(snap, "default/hi").cost
    assert result.optimality == "heuristic:policy" == result.to_dict()["optimality"]
    assert plan(snap, "default/hi", "legacy").optimality == "heuristic:policy"


def test_a_plan_without_victims_is_proven_and_an_infeasible_one_has_no_optimality():
    fits = parse_snapshot([node("n0", gpus=8)] + _gang(2, 4))
    assert plan(fits, "default/hi").optimality == "proven"
    no_room = parse_snapshot([node("n0", gpus=4)] + _gang(2, 4))
    result = plan(no_room, "default/hi")
    assert not result.feasible and result.optimality is None and result.to_dict()["optimality"] is None


def test_a_step_budget_that_runs_out_keeps_the_heuristics_plan_and_says_so(monkeypatch):
    snap = parse_snapshot(_one_budget_more())
    monkeypatch.setattr(exact, "MAX_STEPS", 1)
    result = plan(snap, "default/hi")
    assert result.optimality == "heuristic:budget"
    assert result.feasible and result.pdb_violations == 1  # the heuristic's plan, still a valid one


def test_a_domain_with_more_candidate_units_than_the_bound_is_not_searched(monkeypatch):
    snap = parse_snapshot(_one_budget_more())
    monkeypatch.setattr(exact, "MAX_UNITS", 1)
    result = plan(snap, "default/hi")
    assert result.optimality == "heuristic:bound" and result.pdb_violations == 1


def test_a_pod_under_two_budgets_is_left_to_the_heuristic():
    objects = _one_budget_more() + [pdb("also", match_labels={"app": "bare"}, allowed=5)]
    result = plan(parse_snapshot(objects), "default/hi")
    assert result.feasible and result.optimality == "heuristic:unmodelled"


def test_every_optimality_is_a_documented_one():
    for objects in (_three_pods_or_one(), _one_budget_more()):
        for policy in ("gangweb", "kep5710", "legacy"):
            assert plan(parse_snapshot(objects), "default/hi", policy).optimality in OPTIMALITY


def test_the_same_snapshot_gives_the_same_plan():
    objects = _one_budget_more()
    assert (
        plan(parse_snapshot(objects), "default/hi").to_dict()
        == plan(parse_snapshot(objects), "default/hi").to_dict()
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
)
@given(st.randoms(use_true_random=False))
def test_a_proven_plan_is_never_worse_than_the_brute_force(rng: random.Random):
    snap = parse_snapshot(small_cluster(rng))
    problem = Problem(snap, Preemptor(snap, "default/hi"))
    assume(0 < problem.eligible_count <= MAX_UNITS and not _exact_fit(problem, snap.free))
    best = optimum(problem)
    assume(best is not None)
    result = plan(snap, "default/hi")
    assert result.feasible
    if result.optimality == "proven":
        assert tuple(result.cost) == best
    else:
        assert result.cost >= best


@pytest.mark.parametrize("seed", [1, 2])
def test_the_quality_study_counts_proven_plans_and_all_of_them_are_optimal(seed):
    from testkit.quality import study

    found = study(60, seed=seed)["policies"]["gangweb"]
    assert found["proven"] > 0 and found["proven_optimal"] == found["proven"]


def test_running_pods_that_pin_the_gang_to_one_rack_of_several_are_searched_there():
    objects = [node(f"n{i}", gpus=8, labels={"rack": f"r{i}"}) for i in range(3)] + [
        pod("low", node="n0", gpus=4, priority=1),
        pod("other", node="n2", gpus=8, priority=1),
        podgroup("hi", min_count=2, priority=100, mode="all", topology="rack"),
        pod("hi-0", group="hi", gpus=4, node="n0"),
        pod("hi-1", group="hi", gpus=4),
    ]
    result = plan(parse_snapshot(objects), "default/hi")
    assert result.evictions == ["default/low"] and result.domain == "r0"
    assert result.optimality == "proven"
