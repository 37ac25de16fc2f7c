"""The snapshot kept from watch events (scheduler/engine/live.py) plans exactly as a fresh parse of the same
objects, after any stream of pod adds, binds, deletions, node changes and PodGroup changes."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import SnapshotError, parse_snapshot, plan
from scheduler.engine.builders import pod
from scheduler.engine.live import LiveSnapshot, raw_key
from scheduler.engine.synthetic import NAMESPACE, preemptor_name, synthetic_cluster

BASE = synthetic_cluster(48, seed=3)
SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("GANGWEB_PROPERTY_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def ident(obj):
    return (obj["kind"], raw_key(obj))


def random_event(rng: random.Random, objects: dict, serial: int):
    """One change a watch could deliver: (type, object), applied to ``objects`` as the server would."""
    pods = [o for o in objects.values() if o["kind"] == "Pod"]
    nodes = [o for o in objects.values() if o["kind"] == "Node"]
    groups = [o for o in objects.values() if o["kind"] == "PodGroup"]
    choice = rng.random()
    if choice < 0.3 or not pods:  # a pod added, pending or bound, in a group or alone
        group = rng.choice(groups)["metadata"]["name"] if groups and rng.random() < 0.7 else None
        node = rng.choice(nodes)["metadata"]["name"] if nodes and rng.random() < 0.5 else None
        obj = pod(
            f"new-{serial}",
            namespace=NAMESPACE,
            node=node,
            gpus=rng.choice((1, 2, 4, 8)),
            group=group,
            priority=None if group else rng.choice((100, 200, 300)),
            created="2026-07-01T11:00:00Z",
        )
        kind = "ADDED"
    elif choice < 0.5:  # a pending pod bound to a node
        pending = [p for p in pods if not p["spec"].get("nodeName")] or pods
        obj = copy.deepcopy(rng.choice(pending))
        obj["spec"]["nodeName"] = rng.choice(nodes)["metadata"]["name"]
        kind = "MODIFIED"
    elif choice < 0.7:  # a pod deleted
        obj = rng.choice(pods)
        kind = "DELETED"
    elif choice < 0.8:  # a pod terminating
        obj = copy.deepcopy(rng.choice(pods))
        obj["metadata"]["deletionTimestamp"] = "2026-07-01T12:00:00Z"
        kind = "MODIFIED"
    elif choice < 0.9 and nodes:  # a node cordoned, or gone
        obj = copy.deepcopy(rng.choice(nodes))
        if rng.random() < 0.5:
            obj.setdefault("spec", {})["unschedulable"] = True
            kind = "MODIFIED"
        else:
            kind = "DELETED"
    elif groups:  # a PodGroup's priority changed
        obj = copy.deepcopy(rng.choice(groups))
        obj["spec"]["priority"] = rng.choice((100, 200, 300, 400))
        kind = "MODIFIED"
    else:
        return random_event(rng, objects, serial)
    if kind == "DELETED":
        objects.pop(ident(obj), None)
    else:
        objects[ident(obj)] = obj
    return kind, obj


def plans(snapshot):
    return [plan(snapshot, preemptor_name(gpus)).to_dict() for gpus in (8, 64)]


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), events=st.integers(1, 60))
def test_plan_on_the_updated_snapshot_equals_a_plan_on_a_fresh_parse(seed, events):
    rng = random.Random(seed)
    objects = {ident(o): o for o in copy.deepcopy(BASE)}
    live = LiveSnapshot(objects.values())
    for serial in range(events):
        live.apply(*random_event(rng, objects, serial))
        if rng.random() < 0.1:  # snapshots taken mid-stream are memoised, then invalidated by the next event
            live.snapshot()
    assert plans(live.snapshot()) == plans(parse_snapshot(list(objects.values())))


def test_the_indexed_snapshot_is_kept_until_the_next_change():
    live = LiveSnapshot(copy.deepcopy(BASE))
    first = live.snapshot()
    assert live.snapshot() is first
    live.apply("MODIFIED", {"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "a"}})  # not read
    assert live.snapshot() is first
    extra = pod("late", namespace=NAMESPACE, gpus=1, priority=100)
    live.apply("ADDED", extra)
    second = live.snapshot()
    assert second is not first and f"{NAMESPACE}/late" in second.pod_index
    live.apply("DELETED", extra)
    assert f"{NAMESPACE}/late" not in live.snapshot().pod_index


def test_overrides_change_one_snapshot_only():
    live = LiveSnapshot(copy.deepcopy(BASE))
    victim = next(o for o in BASE if o["kind"] == "Pod" and o["spec"].get("nodeName"))
    gone = live.snapshot({ident(victim): None})
    assert raw_key(victim) not in gone.pod_index
    assert raw_key(victim) in live.snapshot().pod_index


def test_a_malformed_object_is_named_until_it_is_fixed_or_deleted():
    live = LiveSnapshot(copy.deepcopy(BASE))
    bad = pod("bad", namespace=NAMESPACE, gpus=1)
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1x"
    live.apply("ADDED", bad)
    with pytest.raises(SnapshotError, match=f"Pod {NAMESPACE}/bad: .*invalid quantity '1x'"):
        live.snapshot()
    live.apply("DELETED", bad)
    assert live.snapshot().pods
