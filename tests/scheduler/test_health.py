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


def test_the_watch_judges_a_gang_again_only_when_a_member_changes_what_its_health_reads(monkeypatch):
    seen: list[health.GangHealth] = []
    watch = health.HealthWatch(seen.append)
    for obj in gang():
        watch.on_event("ADDED", GROUPS if obj["kind"] == "PodGroup" else PODS, _versioned(obj, 1))
    watch.on_event("RELIST", PODS, None)
    judged: list[int] = []
    judge = health.judge
    monkeypatch.setattr(health, "judge", lambda *a, **k: judged.append(1) or judge(*a, **k))
    member = _versioned(gang()[1], 2)
    member["metadata"]["labels"] = {"churn": "1"}
    member["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    watch.on_event("MODIFIED", PODS, member)
    assert judged == [] and seen == []
    member = _versioned(member, 3)
    member["status"]["containerStatuses"] = [
        {"name": "main", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    ]
    watch.on_event("MODIFIED", PODS, member)
    assert judged == [1] and [(h.state, h.causes, h.revision) for h in seen] == [
        ("broken", (health.CRASH_LOOPING,), 3)
    ]


def composite(name: str, min_group_count: int | None, parent: str | None = None) -> dict:
    spec: dict = {
        "schedulingPolicy": {"basic": {}}
        if min_group_count is None
        else {"gang": {"minGroupCount": min_group_count}},
        "disruptionMode": {"single": {}},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": spec,
    }


def replicas(count: int, *, parent: str = "serve", size: int = 2) -> list[dict]:
    """``count`` PodGroups of ``size`` members each under CompositePodGroup ``parent``, all running."""
    out: list[dict] = []
    for r in range(count):
        group = podgroup(f"replica-{r}", min_count=size)
        group["spec"]["parentCompositePodGroupName"] = parent
        out += [group] + [
            pod(f"replica-{r}-{i}", group=f"replica-{r}", node=f"node-{i + 1}") for i in range(size)
        ]
    return out


def _without(objects: list[dict], *names: str) -> list[dict]:
    return [o for o in objects if o["metadata"]["name"] not in names]


def test_a_composite_short_of_min_group_count_breaks_the_groups_still_running():
    objects = [node("node-1"), node("node-2"), composite("serve", 3)] + replicas(3)
    assert not any(h.broken for h in health.judge_all(objects).values())
    # replica-0 loses a member: below its minCount, so the composite runs 2 groups of the 3 it needs.
    judged = health.judge_all(_without(objects, "replica-0-1"))
    assert judged["team-a/replica-0"].causes == (health.LOST, health.COMPOSITE_SHORT)
    for name in ("replica-1", "replica-2"):
        assert judged[f"team-a/{name}"].broken
        assert judged[f"team-a/{name}"].causes == (health.COMPOSITE_SHORT,)
        assert judged[f"team-a/{name}"].as_json()["composite"] == "team-a/serve"
        assert judged[f"team-a/{name}"].running == 2


def test_a_composite_still_at_min_group_count_breaks_only_the_group_that_lost_members():
    objects = [node("node-1"), node("node-2"), composite("serve", 2)] + replicas(3)
    judged = health.judge_all(_without(objects, "replica-0-1"))
    assert judged["team-a/replica-0"].causes == (health.LOST,)
    assert not judged["team-a/replica-1"].broken and not judged["team-a/replica-2"].broken


def test_a_basic_composite_is_never_short():
    objects = [node("node-1"), node("node-2"), composite("serve", None)] + replicas(2)
    judged = health.judge_all(_without(objects, "replica-0-0", "replica-0-1"))
    assert not judged["team-a/replica-1"].broken


def test_a_short_composite_deep_in_the_tree_is_named_by_the_highest_one_short():
    # root needs both of its composites; left needs both its replicas; replica-0 under left loses a member.
    objects = [node("node-1"), node("node-2")]
    objects += [
        composite("root", 2),
        composite("left", 2, parent="root"),
        composite("right", 1, parent="root"),
    ]
    objects += replicas(2, parent="left")
    right = podgroup("solo", min_count=1)
    right["spec"]["parentCompositePodGroupName"] = "right"
    objects += [right, pod("solo-0", group="solo", node="node-1")]
    judged = health.judge_all(_without(objects, "replica-0-1"))
    assert judged["team-a/solo"].broken and judged["team-a/solo"].composite == "team-a/root"
    assert judged["team-a/replica-1"].composite == "team-a/root"


def test_a_composite_that_holds_no_gpus_any_more_is_not_broken():
    objects = [node("node-1"), node("node-2"), composite("serve", 2)] + replicas(2)
    judged = health.judge_all(_without(objects, "replica-0-0", "replica-0-1", "replica-1-0", "replica-1-1"))
    assert not any(h.broken for h in judged.values())


def test_the_watch_sees_a_composite_turn_short_and_recover_from_one_groups_events():
    seen: list[health.GangHealth] = []
    watch = health.HealthWatch(seen.append)
    serve, *rest = [composite("serve", 3)] + replicas(3)
    watch.on_event("ADDED", Kind("CompositePodGroup"), _versioned(serve, 1))
    for i, obj in enumerate(rest):
        watch.on_event("ADDED", GROUPS if obj["kind"] == "PodGroup" else PODS, _versioned(obj, 2 + i))
    watch.on_event("RELIST", PODS, None)
    assert seen == [] and watch.broken() == []

    # replica-0 loses a member: the composite runs 2 of the 3 groups it needs, so its siblings, whose own
    # members all run, are broken too (events of replica-0's pod alone).
    lost = next(o for o in rest if o["metadata"]["name"] == "replica-0-1")
    watch.on_event("DELETED", PODS, _versioned(lost, 20))
    assert {h.key: h.causes for h in seen} == {
        "team-a/replica-0": (health.LOST, health.COMPOSITE_SHORT),
        "team-a/replica-1": (health.COMPOSITE_SHORT,),
        "team-a/replica-2": (health.COMPOSITE_SHORT,),
    }
    assert {h.composite for h in seen} == {"team-a/serve"} and {h.revision for h in seen} == {20}

    # The composite now asks for 2 groups: the siblings recover, replica-0 stays broken by its own loss.
    del seen[:]
    lowered = _versioned(composite("serve", 2), 21)
    watch.on_event("MODIFIED", Kind("CompositePodGroup"), lowered)
    assert sorted((h.key, h.state) for h in seen) == [
        ("team-a/replica-1", "healthy"),
        ("team-a/replica-2", "healthy"),
    ]
    assert [(h.key, h.causes) for h in watch.broken()] == [("team-a/replica-0", (health.LOST,))]


def test_a_watch_seeded_from_a_synced_cache_judges_the_composites_it_holds():
    seen: list[health.GangHealth] = []
    watch = health.HealthWatch(seen.append)
    objects = [node("node-1"), node("node-2"), composite("serve", 3)] + replicas(3)
    watch.seed([_versioned(o, 1 + i) for i, o in enumerate(_without(objects, "replica-2-0"))])
    assert [(h.key, h.causes) for h in watch.broken()] == [
        ("team-a/replica-0", (health.COMPOSITE_SHORT,)),
        ("team-a/replica-1", (health.COMPOSITE_SHORT,)),
        ("team-a/replica-2", (health.LOST, health.COMPOSITE_SHORT)),
    ]
