"""Which gangs count as stuck (pure functions over real-shaped objects; no database)."""

from __future__ import annotations

from datetime import datetime

from scheduler.preemption.detection import gang_objects, unschedulable_gangs
from tests.scheduler.preemption.builders import T0, T1, node, pod, podgroup, small_cluster

START = datetime.fromisoformat(T1.replace("Z", "+00:00")).timestamp()  # the preemptor pods' creation


def stuck(objects, *, after: float, grace: float = 30):
    return [(g.key, g.trigger) for g in unschedulable_gangs(objects, now=START + after, grace_seconds=grace)]


def without_condition(objects):
    for obj in objects:
        if obj["kind"] == "PodGroup":
            obj["status"] = {}
    return objects


def test_scheduler_condition_makes_a_gang_stuck_at_once():
    [(key, trigger)] = stuck(small_cluster(), after=1)
    assert key == "team-a/train" and trigger.startswith("PodGroupInitiallyScheduled=False (Unschedulable)")


def test_pending_pods_count_only_after_the_grace_period():
    objects = without_condition(small_cluster())
    assert stuck(objects, after=10) == []
    [(key, trigger)] = stuck(objects, after=45)
    assert key == "team-a/train" and trigger == "pods pending for 45s (grace 30s)"


def test_gangs_that_never_preempt_are_left_alone():
    objects = small_cluster()
    objects = [o for o in objects if not (o["kind"] == "PodGroup" and o["metadata"]["name"] == "train")]
    objects.append(
        podgroup("team-a", "train", min_count=2, priority=100, unschedulable=True, preemption_policy="Never")
    )
    assert stuck(objects, after=100) == []


def test_enforce_mode_gangs_with_the_policy_annotation_are_picked_up():
    """gangweb sets spec Never (so kube-scheduler keeps out) and keeps the real policy in the annotation."""
    objects = [
        o for o in small_cluster() if not (o["kind"] == "PodGroup" and o["metadata"]["name"] == "train")
    ]
    objects.append(
        podgroup(
            "team-a",
            "train",
            min_count=2,
            priority=100,
            unschedulable=True,
            preemption_policy="Never",
            annotations={"gangweb.io/preemption-policy": "PreemptLowerPriority"},
        )
    )
    assert [key for key, _ in stuck(objects, after=1)] == ["team-a/train"]


def test_running_and_terminating_pods_are_not_pending():
    objects = [
        node("node-0"),
        podgroup("team-b", "done", min_count=1, priority=5, unschedulable=True),
        pod("team-b", "done-0", group="done", priority=5, node_name="node-0"),
    ]
    leaving = pod("team-b", "done-1", group="done", priority=5)
    leaving["metadata"]["deletionTimestamp"] = T0
    objects.append(leaving)
    assert stuck(objects, after=100) == []


def test_the_watch_triggers_pass_judges_one_gang_as_the_full_pass_does():
    objects = small_cluster() + small_cluster(preemptor_ns="team-b")
    assert [key for key, _ in stuck(objects, after=1)] == ["team-a/train", "team-b/train"]
    one = gang_objects(objects, "team-b/train")
    assert {o["kind"] for o in one} <= {"Pod", "PodGroup", "PriorityClass"}
    assert sorted(o["metadata"]["name"] for o in one if o["kind"] == "Pod") == ["train-0", "train-1"]
    assert stuck(one, after=1) == [s for s in stuck(objects, after=1) if s[0] == "team-b/train"]
    assert stuck(gang_objects(objects, "team-b/nothing"), after=1) == []
