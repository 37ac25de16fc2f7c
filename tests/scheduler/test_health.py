"""Gang health judged from raw objects: broken when fewer than minCount members run while some hold GPUs."""

from __future__ import annotations

import copy

from scheduler import health
from tests.scheduler.kube.objects import node, pod, podgroup


class Kind:
    def __init__(self, kind: str) -> None:
        self.kind = kind


PODS, NODES, GROUPS = Kind("Pod"), Kind("Node"), Kind("PodGroup")


def _versioned(obj: dict, version: int) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"]["resourceVersion"] = str(version)
    return obj


def gang(size: int = 4, *, min_count: int = 4) -> list[dict]:
    return [podgroup("train", min_count=min_count)] + [
        pod(f"train-{i}", group="train", node=f"node-{i % 2 + 1}") for i in range(size)
    ]


def ready(_node: str) -> bool:
    return True


def test_a_gang_with_every_member_running_is_healthy():
    group, *pods = gang()
    judged = health.judge(group, pods, ready)
    assert judged is not None and not judged.broken
    assert (judged.running, judged.held_gpus, judged.causes) == (4, 4, ())


def test_a_member_deleted_leaves_the_rest_holding_gpus_for_nothing():
    group, *pods = gang()
    judged = health.judge(group, pods[1:], ready)
    assert judged.broken and judged.causes == (health.LOST,)
    assert (judged.running, judged.held_gpus) == (3, 3)


def test_crash_looping_failed_and_not_ready_members_do_not_count_as_running():
    group, *pods = gang()
    pods[0]["status"]["containerStatuses"] = [
        {"name": "main", "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "restartCount": 5}
    ]
    judged = health.judge(group, pods, ready)
    assert judged.broken and judged.causes == (health.CRASH_LOOPING,) and judged.held_gpus == 4

    judged = health.judge(group, pods[1:], lambda n: n != "node-2")
    assert set(judged.causes) == {health.NODE_NOT_READY, health.LOST} and judged.running == 1

    failed = [pod("train-0", group="train", phase="Failed")] + pods[1:]
    judged = health.judge(group, failed, ready)
    assert judged.broken and judged.causes == (health.FAILED,)


def test_a_gang_waiting_to_be_placed_or_done_holds_nothing_and_is_not_broken():
    group = podgroup("train", min_count=4)
    waiting = [pod(f"train-{i}", group="train", node=None) for i in range(4)]
    assert not health.judge(group, waiting, ready).broken
    done = [pod(f"train-{i}", group="train", phase="Succeeded") for i in range(4)]
    assert not health.judge(group, done, ready).broken
    # a replacement waits to be bound: broken still, and said to be restarting
    _, *pods = gang()
    judged = health.judge(group, pods[1:] + waiting[:1], ready)
    assert judged.broken and judged.restarting


def test_a_podgroup_without_a_gang_policy_is_never_judged():
    basic = podgroup("web")
    basic["spec"]["schedulingPolicy"] = {"basic": {}}
    assert health.judge(basic, [pod("web-0", group="web")], ready) is None
    assert health.judge(None, [pod("web-0", group="web")], ready) is None


def test_the_watch_reports_a_change_once_every_pod_is_listed_and_only_for_the_gangs_touched():
    seen: list[health.GangHealth] = []
    watch = health.HealthWatch(seen.append)
    group, *pods = gang()
    watch.on_event("ADDED", GROUPS, _versioned(group, 1))
    for i, p in enumerate(pods[1:]):  # a member already gone when the cache first lists
        watch.on_event("ADDED", PODS, _versioned(p, 10 + i))
    assert seen == []  # half listed: not judged yet
    watch.on_event("RELIST", PODS, None)
    assert [(h.key, h.state) for h in seen] == [("team-a/train", "broken")]

    watch.on_event("ADDED", PODS, _versioned(pods[0], 20))  # the controller put it back
    assert [(h.state, h.revision) for h in seen[1:]] == [("healthy", 20)]

    watch.on_event("ADDED", NODES, _versioned(node("node-1"), 30))
    assert len(seen) == 2  # a node seen as it was: nothing to re-judge
    down = _versioned(node("node-1"), 31)
    down["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    watch.on_event("MODIFIED", NODES, down)
    assert [(h.state, h.causes, h.revision) for h in seen[2:]] == [("broken", (health.NODE_NOT_READY,), 31)]
    assert [h.key for h in watch.broken()] == ["team-a/train"]

    for i, p in enumerate(pods):  # the gang deleted: a broken gang gone holds nothing any more
        watch.on_event("DELETED", PODS, _versioned(p, 40 + i))
    assert seen[-1].state == "healthy" and seen[-1].held_gpus == 0 and seen[-1].revision == 43
