"""Pods already terminating (``deletionTimestamp`` set, not finished), the same for every policy.

kube-scheduler keeps such a pod in its node's room until it is gone: a preemptor may count on that room only
when the pod is one it could preempt (strictly lower priority; ``SelectVictimsOnNode`` / ``GenerateVictims``
then list it, and the executor skips the API call for a pod whose deletion has started). A terminating pod of
equal or higher priority holds its room. gangweb never evicts a terminating pod again, nor counts it in a cost.
"""

import pytest

from scheduler.engine import POLICIES, parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.outcomes import Outcome

PREEMPTOR = 100


def _gang(pods=1, gpus=8):
    return [podgroup("hi", min_count=pods, priority=PREEMPTOR)] + [
        pod(f"hi-{i}", group="hi", gpus=gpus, priority=PREEMPTOR) for i in range(pods)
    ]


def _cluster(leaving_priority, **leaving):
    """Node a: one pod terminating; node b: one low pod running. The gang wants one whole node."""
    return [
        node("a"),
        node("b"),
        pod("leaving", node="a", gpus=8, priority=leaving_priority, deleting=True, **leaving),
        pod("low", node="b", gpus=8, priority=1),
        *_gang(),
    ]


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("leaving_priority", [PREEMPTOR, PREEMPTOR + 1])
def test_a_terminating_pod_the_gang_could_not_preempt_holds_its_room(policy, leaving_priority):
    result = plan(parse_snapshot(_cluster(leaving_priority)), "default/hi", policy)
    assert result.outcome is Outcome.PREEMPT
    assert [p for v in result.victims for p in v.pods] == ["default/low"]
    assert result.evictions == ["default/low"]
    assert result.placement == {"default/hi-0": "b"}


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_terminating_pod_the_gang_outranks_leaves_room_at_no_cost(policy):
    result = plan(parse_snapshot(_cluster(PREEMPTOR - 1)), "default/hi", policy)
    assert result.outcome is Outcome.FITS and result.victims == [] and result.evictions == []
    assert result.placement == {"default/hi-0": "a"}
    assert "once 1 lower-priority pod already terminating there is gone" in result.reason


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_terminating_pod_of_a_higher_priority_group_holds_its_room(policy):
    # The group's priority decides, not the pod's own (KEP-5710 GetPodPriority).
    objects = _cluster(None, group="serving") + [podgroup("serving", priority=PREEMPTOR + 5)]
    result = plan(parse_snapshot(objects), "default/hi", policy)
    assert result.outcome is Outcome.PREEMPT and result.evictions == ["default/low"]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_finished_pod_with_a_deletion_timestamp_holds_nothing(policy):
    objects = _cluster(PREEMPTOR + 1, phase="Succeeded")
    result = plan(parse_snapshot(objects), "default/hi", policy)
    assert result.outcome is Outcome.FITS and result.placement == {"default/hi-0": "a"}
    assert "terminating" not in result.reason


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_when_no_room_is_left_but_a_terminating_pod_s_the_gang_cannot_start(policy):
    objects = [
        node("a"),
        pod("leaving", node="a", gpus=8, priority=PREEMPTOR, deleting=True),
        *_gang(),
    ]
    result = plan(parse_snapshot(objects), "default/hi", policy)
    assert not result.feasible and result.evictions == []
