"""``kep5710`` against kube-scheduler v1.37.2's preemptor eligibility and ongoing-preemption detection.

The cases are the Go code's own, as data: ``TestPodTerminatingByPreemption`` (pkg/scheduler/framework/
preemption/util_test.go) and ``TestPodGroupEvaluator_Preempt`` (podgrouppreemption_test.go). The Go test
calls ``Preempt`` directly on capacity-less nodes; the engine asks only once the gang does not fit, so
each case gives node1 room for one pod and the preemptor minCount 2 (its two pods, as upstream).
"""

import pytest

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.outcomes import Outcome
from scheduler.engine.typed_objects import Pod

LOW, HIGH = 10, 1000
PREEMPTED = ("DisruptionTarget", "True", "PreemptionByScheduler")


def _marked(obj, condition):
    kind, status, reason = condition
    obj["status"]["conditions"] = [{"type": kind, "status": status, "reason": reason}]
    return obj


def _nominated(obj, node_name):
    obj["status"]["nominatedNodeName"] = node_name
    return obj


# TestPodTerminatingByPreemption: (name, terminating, DisruptionTarget condition or None, want)
TERMINATING_BY_PREEMPTION = [
    ("pod without DeletionTimestamp", False, None, False),
    ("pod with DeletionTimestamp but no DisruptionTarget condition", True, None, False),
    (
        "DisruptionTarget condition status False",
        True,
        ("DisruptionTarget", "False", "PreemptionByScheduler"),
        False,
    ),
    (
        "DisruptionTarget condition reason not PreemptionByScheduler",
        True,
        ("DisruptionTarget", "True", "SomeOtherReason"),
        False,
    ),
    ("DisruptionTarget condition status True and reason PreemptionByScheduler", True, PREEMPTED, True),
]


@pytest.mark.parametrize(
    ("terminating", "condition", "want"),
    [pytest.param(t, c, w, id=name) for name, t, c, w in TERMINATING_BY_PREEMPTION],
)
def test_a_pod_is_terminating_by_preemption_as_kube_scheduler_reads_it(terminating, condition, want):
    obj = pod("p1", node="node1", deleting=terminating)
    if condition:
        _marked(obj, condition)
    assert Pod(obj).preempted is want


def test_only_the_first_disruption_target_condition_counts():
    obj = pod("p1", node="node1", deleting=True)
    obj["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"},
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
    ]
    assert Pod(obj).preempted is False


def _preemptor(policy=None):
    return [
        podgroup("preemptor-pg", min_count=2, priority=HIGH, preemption_policy=policy),
        pod("p1", group="preemptor-pg", priority=HIGH, created="2026-07-01T00:00:01Z"),
        _nominated(pod("p2", group="preemptor-pg", priority=HIGH, created="2026-07-01T00:00:02Z"), "node1"),
    ]


# TestPodGroupEvaluator_Preempt's ongoing-preemption cases: (name, the terminating victim's own priority,
# its PodGroup's disruption mode or None for no group). Upstream: success, "ongoing preemption on nominated
# nodes", p1 nominated to "" and p2 kept on node1; the scheduling function is never called.
ONGOING = [
    ("member has nominated node with terminating pods", LOW, None),
    ("terminating pod belongs to a pod group of lower priority", HIGH, "all"),
    ("terminating pod belongs to a pod group of lower priority with DisruptionModePod", HIGH, "single"),
]


@pytest.mark.parametrize(("own_priority", "mode"), [pytest.param(p, m, id=name) for name, p, m in ONGOING])
def test_kep5710_waits_for_an_ongoing_preemption_on_a_nominated_node(own_priority, mode):
    victim = pod(
        "victim", node="node1", priority=own_priority, deleting=True, group="victim-pg" if mode else None
    )
    objects = [node("node1", pods=1), _marked(victim, PREEMPTED), *_preemptor()]
    if mode:
        objects.append(podgroup("victim-pg", priority=LOW, mode=mode))
    result = plan(parse_snapshot(objects), "default/preemptor-pg", "kep5710")
    assert result.outcome is Outcome.FITS and result.victims == []
    assert result.placement == {"default/p2": "node1"}
    assert result.reason.startswith("ongoing preemption on nominated nodes (node1)")


# The two PreemptNever cases: not eligible, whatever could be preempted. Eligibility is asked before an
# ongoing preemption (``Preempt``), so node1 also holds one here: the same gang without Never waits for it.
@pytest.mark.parametrize(
    "victim_groups", [pytest.param(False, id="pod victims"), pytest.param(True, id="PodGroup victims")]
)
def test_kep5710_never_preempts_when_preemption_policy_is_never(victim_groups):
    objects = [node(f"node{i}", pods=1) for i in (1, 2, 3)] + [
        pod("v1", node="node1", priority=LOW),
        pod("v2", node="node2", priority=LOW, group="pg1"),
        pod("v3", node="node3", priority=LOW, group="pg2"),
        _marked(pod("victim", node="node1", priority=LOW, deleting=True), PREEMPTED),
    ]
    if victim_groups:
        objects += [podgroup("pg1", priority=LOW), podgroup("pg2", priority=LOW)]
    never = plan(parse_snapshot(objects + _preemptor("Never")), "default/preemptor-pg", "kep5710")
    assert never.outcome is Outcome.NEVER_PREEMPTS and never.victims == []
    eligible = plan(parse_snapshot(objects + _preemptor()), "default/preemptor-pg", "kep5710")
    assert eligible.outcome is Outcome.FITS and eligible.placement == {"default/p2": "node1"}


# What isOngoingPreemption does not count, each one change from a snapshot where it does: the gang then
# preempts as usual (the running pod on node2) instead of waiting.
NOT_ONGOING = {
    "terminating, not by preemption": dict(condition=("DisruptionTarget", "True", "EvictionByEvictionAPI")),
    "marked but not yet terminating": dict(deleting=False),
    "terminating pod on a node no member is nominated to": dict(nominated="node2"),
    "nominated node missing from the snapshot": dict(nominated="gone"),
}


def _one_preemption_under_way(priority=LOW, deleting=True, condition=PREEMPTED, nominated="node1"):
    preemptor = _preemptor()
    _nominated(preemptor[2], nominated)
    return [
        node("node1", pods=1),
        node("node2", pods=1),
        _marked(pod("victim", node="node1", priority=priority, deleting=deleting), condition),
        pod("running", node="node2", priority=LOW),
        *preemptor,
    ]


@pytest.mark.parametrize("change", [pytest.param(v, id=k) for k, v in NOT_ONGOING.items()])
def test_kep5710_preempts_when_no_preemption_is_ongoing_on_its_nominated_nodes(change):
    waits = plan(parse_snapshot(_one_preemption_under_way()), "default/preemptor-pg", "kep5710")
    assert waits.outcome is Outcome.FITS and waits.victims == []
    result = plan(parse_snapshot(_one_preemption_under_way(**change)), "default/preemptor-pg", "kep5710")
    assert result.outcome is Outcome.PREEMPT
    assert "default/running" in [p for v in result.victims for p in v.pods]


def test_kep5710_does_not_wait_on_a_terminating_pod_of_equal_priority_which_holds_its_room():
    # Not ongoing (not lower), and not a victim either: node1 stays full, the gang's second pod has no node.
    result = plan(parse_snapshot(_one_preemption_under_way(priority=HIGH)), "default/preemptor-pg", "kep5710")
    assert result.outcome is Outcome.NO_ROOM and "ongoing preemption" not in result.reason


def test_the_gangweb_policy_does_not_wait_on_nominations():
    snap = parse_snapshot(_one_preemption_under_way())
    assert plan(snap, "default/preemptor-pg", "kep5710").outcome is Outcome.FITS
    assert plan(snap, "default/preemptor-pg", "gangweb").outcome is Outcome.PREEMPT
