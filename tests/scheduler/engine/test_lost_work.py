"""Lost work in the plan: checkpoints lower what a victim loses, gangweb spares the work it can, kep5710
stays the KEP's, and a lost-work budget is kept (scheduler/engine/allowance.py, entry.py)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.allowance import Allowance
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.checkpoints import CHECKPOINT_ANNOTATION, Intervals
from scheduler.engine.outcomes import Outcome

START = "2026-07-01T00:00:00Z"
NOW = "2026-07-01T01:00:00Z"  # the snapshot's "now": the latest timestamp in it (the clock pod's start)
HOUR = 3600.0


def clock():
    """A pod on a GPU-less node whose start sets the snapshot's now, an hour after the others started."""
    return [node("clock", gpus=0), pod("clock", node="clock", start=NOW)]


def preemptor(gpus=8, namespace="default"):
    return [
        podgroup("hi", namespace=namespace, min_count=1, priority=100),
        pod("hi-0", namespace=namespace, group="hi", gpus=gpus, priority=100),
    ]


def gang(name, node_name, *, checkpoint=None, pod_checkpoint=None, namespace="default", priority=1, gpus=8):
    annotations = {CHECKPOINT_ANNOTATION: checkpoint} if checkpoint else None
    pod_annotations = {CHECKPOINT_ANNOTATION: pod_checkpoint} if pod_checkpoint else None
    return [
        podgroup(
            name, namespace=namespace, min_count=1, priority=priority, mode="all", annotations=annotations
        ),
        pod(
            f"{name}-0",
            namespace=namespace,
            node=node_name,
            group=name,
            gpus=gpus,
            priority=priority,
            annotations=pod_annotations,
        ),
    ]


def victims_json(result):
    return {v["name"]: v["lostGpuSeconds"] for v in result.to_dict()["victims"]}


@pytest.mark.parametrize("policy", ["gangweb", "kep5710", "legacy"])
def test_each_victim_reports_the_work_since_its_last_checkpoint(policy):
    snap = parse_snapshot(
        [node("a")] + gang("low", "a", checkpoint="2026-07-01T00:50:00Z") + clock() + preemptor()
    )
    result = plan(snap, "default/hi", policy)
    # 8 GPUs x the 10 minutes since the PodGroup's checkpoint, not the hour since the start.
    lost = 8 * 600.0
    if policy == "legacy":  # per-pod: its victim is the pod
        assert victims_json(result) == {"low-0": lost}
    else:
        assert victims_json(result) == {"low": lost}
    assert result.lost_gpu_seconds == lost


def test_the_newest_of_the_pod_and_its_group_counts_and_volcano_is_read():
    objects = [node("a"), node("b")]
    objects += gang("pg", "a", checkpoint="2026-07-01T00:30:00Z", pod_checkpoint="2026-07-01T00:45:00Z")
    objects += gang("vc", "b")
    objects[-1]["metadata"]["annotations"] = {"volcano.sh/last-checkpoint-time": "2026-07-01T00:40:00Z"}
    # The gang needs both nodes' worth of room: two 8-GPU pods of its own.
    snap = parse_snapshot(
        objects
        + clock()
        + [
            podgroup("hi", min_count=2, priority=100),
            pod("hi-0", group="hi", gpus=8, priority=100),
            pod("hi-1", group="hi", gpus=8, priority=100),
        ]
    )
    assert victims_json(plan(snap, "default/hi", "gangweb")) == {"pg": 8 * 900.0, "vc": 8 * 1200.0}


def test_a_silent_workload_is_assumed_to_save_every_interval_of_its_namespace():
    snap = parse_snapshot([node("a")] + gang("low", "a") + clock() + preemptor())
    assert victims_json(plan(snap, "default/hi")) == {"low": 8 * HOUR}
    assumed = snap.with_lost_work(Intervals(default=0.0, namespaces={"default": 1500.0}))
    # Saved at 25 and 50 minutes: the last 10 minutes are lost.
    assert victims_json(plan(assumed, "default/hi")) == {"low": 8 * 600.0}
    # A reported checkpoint wins over the assumed one, even when older.
    reported = parse_snapshot(
        [node("a")] + gang("low", "a", checkpoint="2026-07-01T00:20:00Z") + clock() + preemptor()
    ).with_lost_work(Intervals(default=1500.0))
    assert victims_json(plan(reported, "default/hi")) == {"low": 8 * 2400.0}


def _two_equal_gangs(checkpointed):
    """Two gangs alike in all the KEP ranks (priority, kind, size, start); only ``checkpointed`` saved."""
    objects = [node("a"), node("b")]
    for name, where in (("x", "a"), ("y", "b")):
        objects += gang(name, where, checkpoint="2026-07-01T00:55:00Z" if name == checkpointed else None)
    return parse_snapshot(objects + clock() + preemptor())


@pytest.mark.parametrize("checkpointed", ["x", "y"])
def test_gangweb_evicts_the_gang_that_loses_least_kep5710_stays_the_keps(checkpointed):
    snap = _two_equal_gangs(checkpointed)
    gangweb = plan(snap, "default/hi", "gangweb")
    assert [v.name for v in gangweb.victims] == [checkpointed]
    assert gangweb.lost_gpu_seconds == 8 * 300.0 and gangweb.optimality == "proven"
    # The KEP's evaluator ranks by priority, kind, size, start and UID only: its choice does not move.
    assert [v.name for v in plan(_two_equal_gangs("x"), "default/hi", "kep5710").victims] == [
        v.name for v in plan(_two_equal_gangs("y"), "default/hi", "kep5710").victims
    ]


def _two_teams():
    """Room for the gang on node a (team-a's gang, an hour of work unsaved) or b (team-b's, the same)."""
    return parse_snapshot(
        [node("a"), node("b")]
        + gang("big", "a", namespace="team-a", priority=1)
        + gang("other", "b", namespace="team-b", priority=2)
        + clock()
        + preemptor()
    )


def test_a_plan_that_would_overdraw_a_namespace_chooses_other_victims():
    snap = _two_teams()
    assert [v.name for v in plan(snap, "default/hi").victims] == ["big"]
    guarded = snap.with_lost_work(allowance=Allowance(namespaces={"team-a": 0.0}))
    result = plan(guarded, "default/hi")
    assert result.feasible and [v.name for v in result.victims] == ["other"]
    assert "within the lost-work budget" in result.reason and "team-a/lost-work-budget" in result.reason


def test_a_gang_waits_when_every_plan_overdraws_and_its_verdict_says_so():
    guarded = _two_teams().with_lost_work(allowance=Allowance(default=0.0))
    for policy in ("gangweb", "kep5710", "legacy"):
        result = plan(guarded, "default/hi", policy)
        assert not result.feasible and result.outcome is Outcome.LOST_WORK_BUDGET, result.reason
        assert result.to_dict()["outcome"] == "infeasible:lost-work-budget"
        assert "waits for the lost-work budget" in result.reason
        assert result.stats["lostWorkBudget"] == [
            {"pool": "team-a/lost-work-budget", "wantedGpuSeconds": 8 * HOUR, "leftGpuSeconds": 0.0}
        ]


def test_a_unit_that_just_checkpointed_stays_preemptable_with_no_budget_left():
    objects = [node("a")] + gang("low", "a", checkpoint=NOW) + clock() + preemptor()
    result = plan(parse_snapshot(objects).with_lost_work(allowance=Allowance(default=0.0)), "default/hi")
    assert result.feasible and [v.name for v in result.victims] == ["low"] and result.lost_gpu_seconds == 0


def test_allowance_left_admits_one_unit_past_it_but_no_more():
    one = Allowance(default=1.0)
    big = [_victim("a", 8 * HOUR)]
    assert one.overdrawn(big) == {}  # one unit may go past what is left
    assert set(one.overdrawn(big + [_victim("b", 1.0)])) == {"team/lost-work-budget"}
    assert Allowance(default=0.0).overdrawn(big) != {}
    assert Allowance(namespaces={"other": 0.0}).overdrawn(big) == {}  # no cap on this namespace
    queued = Allowance(queues={"q": 0.0}, queue_of={"team/a-0": "q"})
    assert set(queued.overdrawn(big)) == {"queue q"}


def _victim(name, lost):
    from scheduler.engine.contract import Victim

    return Victim("PodGroup", "team", name, 1, [f"team/{name}-0"], gpus=8, lost_gpu_seconds=lost)


# -- the budget's property: over a rolling hour, never more than one unit past the cap ------------------


@st.composite
def busy_hours(draw):
    """A cluster full of low-priority gangs of three teams, some checkpointed, and a queue of preemptors."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n_nodes = draw(st.integers(2, 8))
    objects = [node(f"n{i}") for i in range(n_nodes)] + clock()
    for i in range(n_nodes):
        for half in range(2):
            minute = rng.choice([None, None, 10, 30, 50, 59])
            objects += gang(
                f"v{i}-{half}",
                f"n{i}",
                namespace=rng.choice(["team-a", "team-b", "team-c"]),
                priority=rng.choice([1, 2, 3]),
                gpus=4,
                checkpoint=None
                if minute is None
                else f"2026-07-01T00:{minute:02d}:00Z".replace(":60:", ":59:"),
            )
    caps = {team: rng.choice([0.0, 0.5, 2.0, 8.0]) * HOUR for team in ("team-a", "team-b", "team-c")}
    gangs = [rng.choice([4, 8, 12]) for _ in range(draw(st.integers(1, 5)))]
    return objects, caps, gangs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_hours(), st.sampled_from(["gangweb", "kep5710", "legacy"]))
def test_the_lost_work_cap_is_never_exceeded_by_more_than_one_unit(case, policy):
    objects, caps, gangs = case
    lost: dict[str, float] = {team: 0.0 for team in caps}
    largest: dict[str, float] = {team: 0.0 for team in caps}
    for k, gpus in enumerate(gangs):
        name = f"hi{k}"
        objects = objects + [
            podgroup(name, namespace="prod", min_count=1, priority=100),
            pod(f"{name}-0", namespace="prod", group=name, gpus=gpus, priority=100),
        ]
        allowance = Allowance(namespaces={team: caps[team] - lost[team] for team in caps})
        result = plan(parse_snapshot(objects).with_lost_work(allowance=allowance), f"prod/{name}", policy)
        if not result.feasible:
            continue
        evicted = set(result.evictions)
        for victim in result.victims:
            lost[victim.namespace] += victim.lost_gpu_seconds
            largest[victim.namespace] = max(largest[victim.namespace], victim.lost_gpu_seconds)
        # Executed: the victims go, the gang runs where it was placed.
        kept = []
        for obj in objects:
            key = f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
            if obj["kind"] == "Pod" and key in evicted:
                continue
            if obj["kind"] == "Pod" and key in result.placement:
                obj = {**obj, "spec": {**obj["spec"], "nodeName": result.placement[key]}}
                obj["status"] = {"phase": "Running", "startTime": NOW}
            kept.append(obj)
        objects = kept
    for team, cap in caps.items():
        assert lost[team] <= cap + largest[team] + 1e-6, (team, lost[team], cap, largest[team])


def test_a_watch_event_that_only_moves_the_checkpoint_reaches_the_live_snapshot():
    from scheduler.engine.caching.live import LiveSnapshot

    objects = [node("a")] + gang("low", "a") + clock() + preemptor()
    live = LiveSnapshot(objects)
    assert victims_json(plan(live.snapshot(), "default/hi")) == {"low": 8 * HOUR}
    saved = gang("low", "a", checkpoint="2026-07-01T00:45:00Z")[0]
    assert live.apply("MODIFIED", saved)  # the engine's view changed: the index is built again
    assert victims_json(plan(live.snapshot(), "default/hi")) == {"low": 8 * 900.0}
