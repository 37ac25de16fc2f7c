"""The plan's own types: the cost as a named tuple that still orders like the docs/design.md tuple."""

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.contract import NO_VICTIM_COST, Cost, Plan


def _snapshot():
    return parse_snapshot(
        [
            node("a"),
            pod("low", node="a", gpus=8, priority=1, start="2026-06-30T00:00:00Z"),
            podgroup("hi", min_count=1, priority=100),
            pod("hi-0", group="hi", gpus=8, priority=100),
        ]
    )


def test_the_cost_is_named_and_orders_like_its_tuple():
    result = plan(_snapshot(), "default/hi")
    assert isinstance(result.cost, Cost)
    assert (result.cost.pdb_violations, result.cost.highest_victim_priority, result.cost.victim_units) == (
        0,
        1,
        1,
    )
    assert result.cost_breakdown == result.cost._asdict()
    assert result.cost > NO_VICTIM_COST and tuple(result.cost) < (0, 2)


def test_a_plan_rebuilt_from_a_plain_tuple_ranks_and_reads_alike():
    result = plan(_snapshot(), "default/hi")
    rebuilt = Plan(
        gang_key=result.gang_key,
        policy=result.policy,
        feasible=True,
        reason="",
        cost=tuple(result.cost),
        placement=result.placement,
        domain=result.domain,
    )
    assert rebuilt.rank == result.rank and rebuilt.cost_breakdown["victim_units"] == 1
