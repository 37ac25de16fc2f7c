"""KEP-5732 through CompositePodGroups: a composite with a topology key keeps its whole tree in one value of
that label, so a gang whose siblings already run is placed in their value, for every policy."""

import pytest

from scheduler.engine import POLICIES, parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.outcomes import Outcome


def _rack(name, rack):
    return node(name, labels={"rack": rack})


def _tree(composite_topology="rack", sibling_nodes=("a1",)):
    """Composite ``serve`` (rack) over ``replica-0`` (running on ``sibling_nodes``) and ``replica-1`` (pending,
    one 8-GPU pod). Rack a: a1 (the sibling), a2 (a low pod); rack b: b1, empty."""
    objects = [_rack("a1", "a"), _rack("a2", "a"), _rack("a3", "a"), _rack("b1", "b")]
    objects += [
        podgroup("serve", kind="CompositePodGroup", min_count=2, priority=100, topology=composite_topology),
        podgroup("replica-0", min_count=len(sibling_nodes), priority=100, parent="serve"),
        podgroup("replica-1", min_count=1, priority=100, parent="serve"),
        pod("replica-1-0", group="replica-1", gpus=8, priority=100),
        pod("low", node="a2", gpus=8, priority=1),
        pod("other", node="a3", gpus=8, priority=500),
    ]
    objects += [
        pod(f"replica-0-{i}", node=n, group="replica-0", gpus=8, priority=100)
        for i, n in enumerate(sibling_nodes)
    ]
    return objects


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_gang_joins_the_rack_its_running_siblings_hold_even_if_it_must_preempt_there(policy):
    result = plan(parse_snapshot(_tree()), "default/replica-1", policy)
    assert result.outcome is Outcome.PREEMPT, result.reason
    assert result.placement == {"default/replica-1-0": "a2"} and result.evictions == ["default/low"]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_without_a_composite_topology_the_gang_takes_free_room_anywhere(policy):
    result = plan(parse_snapshot(_tree(composite_topology=None)), "default/replica-1", policy)
    assert result.outcome is Outcome.FITS and result.placement == {"default/replica-1-0": "b1"}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_siblings_already_split_across_racks_leave_no_place(policy):
    result = plan(parse_snapshot(_tree(sibling_nodes=("a1", "b1"))), "default/replica-1", policy)
    assert result.outcome is Outcome.TOPOLOGY
    assert "running groups of CompositePodGroup serve already span several 'rack' values" in result.reason
