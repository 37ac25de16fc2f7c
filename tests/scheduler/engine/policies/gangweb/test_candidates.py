"""The candidate generators behind gangweb, each on the case it exists for."""

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.evaluation import Problem
from scheduler.engine.policies.gangweb.costaware import CostAwarePlacer
from scheduler.engine.policies.gangweb.unitfill import unit_fill_placement
from scheduler.engine.preemptor import Preemptor


def _problem(objects, group="default/hi"):
    snap = parse_snapshot(objects)
    gang = Preemptor(snap, group)
    return snap, Problem(snap, gang), gang.domains()[0][0]


def _gang(count, gpus=8, priority=100):
    return [podgroup("hi", min_count=count, priority=priority, mode="all")] + [
        pod(f"hi-{i}", group="hi", gpus=gpus) for i in range(count)
    ]


def test_cost_aware_picks_the_cheapest_node_per_pod():
    objects = [node(f"n{i}") for i in range(4)]
    objects += [
        pod("p50", node="n0", gpus=8, priority=50),
        pod("p10", node="n1", gpus=8, priority=10),
        pod("p20a", node="n2", gpus=4, priority=20),
        pod("p20b", node="n2", gpus=4, priority=20),
        pod("p5", node="n3", gpus=8, priority=5),
    ] + _gang(2)
    snap, problem, domain = _problem(objects)
    assignments, evicted = CostAwarePlacer(problem, domain).place()
    assert sorted(snap.nodes[n].name for _, n in assignments) == ["n1", "n3"]
    assert sorted(problem.units.units[u].name for u in evicted) == ["p10", "p5"]


def test_cost_aware_reuses_room_freed_by_an_all_unit():
    objects = [node(f"n{i}") for i in range(3)]
    objects += [
        podgroup("wide", priority=10, mode="all", min_count=2),
        pod("wide-0", node="n0", gpus=8, group="wide"),
        pod("wide-1", node="n1", gpus=8, group="wide"),
        pod("solo", node="n2", gpus=8, priority=10, start="2026-06-30T00:00:00Z"),
    ] + _gang(2)
    _snap, problem, domain = _problem(objects)
    assignments, evicted = CostAwarePlacer(problem, domain).place()
    # The first pod may evict either; the second must then use what is already free, never a third unit.
    assert len(evicted) <= 2 and len({n for _, n in assignments}) == 2


def test_unit_fill_prefers_one_gang_over_many_lone_pods():
    objects = [node(f"n{i}") for i in range(6)]
    objects += [podgroup("gang4", priority=10, mode="all", min_count=4)]
    objects += [pod(f"gang4-{i}", node=f"n{i}", gpus=8, group="gang4") for i in range(4)]
    objects += [pod("lone-a", node="n4", gpus=8, priority=10), pod("lone-b", node="n5", gpus=8, priority=10)]
    objects += _gang(4)
    snap, problem, domain = _problem(objects)
    placed = unit_fill_placement(problem, domain)
    assert sorted(snap.nodes[n].name for _, n in placed) == ["n0", "n1", "n2", "n3"]
    result = plan(snap, "default/hi", "gangweb")
    assert [v.name for v in result.victims] == ["gang4"]


def test_gangweb_domains_are_independent_and_the_cheapest_wins():
    objects = [node(f"n{i}", labels={"rack": f"r{i // 2}"}) for i in range(6)]
    objects += [
        pod("r0-a", node="n0", gpus=8, priority=40),
        pod("r0-b", node="n1", gpus=8, priority=40),
        pod("r1-a", node="n2", gpus=8, priority=30),
        pod("r1-b", node="n3", gpus=8, priority=60),
        pod("r2-a", node="n4", gpus=8, priority=20),
        pod("r2-b", node="n5", gpus=8, priority=20),
    ]
    objects += [podgroup("hi", min_count=2, priority=100, topology="rack")] + [
        pod(f"hi-{i}", group="hi", gpus=8) for i in range(2)
    ]
    snap = parse_snapshot(objects)
    ours = plan(snap, "default/hi", "gangweb")
    assert ours.domain == "r2" and ours.evictions == ["default/r2-a", "default/r2-b"]
    kep = plan(snap, "default/hi", "kep5710")
    assert kep.feasible and kep.cost >= ours.cost


def test_cost_aware_evicts_the_pod_holding_a_wanted_host_port():
    ported = {
        "containers": [
            {
                "name": "c",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"nvidia.com/gpu": "1"}},
            }
        ]
    }
    objects = [
        node("n0"),
        pod("holder", node="n0", priority=10, spec=ported),
        podgroup("hi", min_count=1, priority=100),
        pod("hi-0", group="hi", spec=ported),
    ]
    snap, problem, domain = _problem(objects)
    assignments, evicted = CostAwarePlacer(problem, domain).place()
    assert [snap.nodes[n].name for _, n in assignments] == ["n0"]
    assert [problem.units.units[u].name for u in evicted] == ["holder"]
    for policy in ("kep5710", "gangweb", "legacy"):
        assert plan(snap, "default/hi", policy).evictions == ["default/holder"], policy
