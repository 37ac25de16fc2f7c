"""The snapshot kept from watch events (scheduler/engine/caching/live.py) plans exactly as a fresh parse of the same
objects, after any stream of pod adds, binds, deletions, node changes and PodGroup changes."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import SnapshotError, parse_snapshot, plan
from scheduler.engine.builders import pod, podgroup
from scheduler.engine.caching.live import LiveSnapshot, raw_key
from testkit.synthetic import NAMESPACE, preemptor_name, synthetic_cluster

BASE = synthetic_cluster(48, seed=3)
SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("GANGWEB_PROPERTY_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def ident(obj):
    return (obj["kind"], raw_key(obj))


def applied(objects: dict, kind: str, obj: dict):
    """(kind, obj) after applying it to ``objects`` as the server would."""
    if kind == "DELETED":
        objects.pop(ident(obj), None)
    else:
        objects[ident(obj)] = obj
    return kind, obj


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
    elif choice < 0.95 and groups:  # a PodGroup's status changed: nothing the engine reads
        obj = copy.deepcopy(rng.choice(groups))
        obj.setdefault("status", {})["conditions"] = [
            {"type": "PodGroupInitiallyScheduled", "status": "False", "lastTransitionTime": f"t{serial}"}
        ]
        obj["metadata"]["resourceVersion"] = str(10_000 + serial)
        kind = "MODIFIED"
    elif groups:  # a PodGroup's priority changed
        obj = copy.deepcopy(rng.choice(groups))
        obj["spec"]["priority"] = rng.choice((100, 200, 300, 400))
        kind = "MODIFIED"
    else:
        return random_event(rng, objects, serial)
    return applied(objects, kind, obj)


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


def test_an_event_the_engine_does_not_read_keeps_the_indexed_snapshot():
    live = LiveSnapshot(copy.deepcopy(BASE))
    first = live.snapshot()
    group = copy.deepcopy(next(o for o in BASE if o["kind"] == "PodGroup"))
    group.setdefault("status", {})["conditions"] = [{"type": "PodGroupInitiallyScheduled", "status": "False"}]
    group["metadata"]["resourceVersion"] = "999999"
    assert live.apply("MODIFIED", group) is False
    assert live.snapshot() is first
    running = copy.deepcopy(next(o for o in BASE if o["kind"] == "Pod" and o["spec"].get("nodeName")))
    running["metadata"].setdefault("labels", {})["churn"] = "1"  # labels are read (budgets' selectors)
    assert live.apply("MODIFIED", running) is True
    assert live.snapshot() is not first


def as_terminating(obj):
    return {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "1970-01-01T00:00:00Z"}}


def after_victims(live, objects, made, local):
    """The plan for the same gang with ``made``'s victims terminating: on the plan's nodes only, or whole."""
    overrides = {("Pod", key): as_terminating(objects[("Pod", key)]) for key in made.evictions}
    if local:
        nodes = set(made.placement.values()) | {
            objects[("Pod", k)]["spec"]["nodeName"] for k in made.evictions
        }
        return plan(live.local(nodes, made.gang_key, overrides), made.gang_key)
    return plan(live.snapshot(overrides), made.gang_key)


def test_the_local_snapshot_holds_the_nodes_asked_their_pods_and_the_groups_own_pods():
    objects = {ident(o): o for o in copy.deepcopy(BASE)}
    live = LiveSnapshot(objects.values())
    made = plan(live.snapshot(), preemptor_name(64))
    assert made.feasible and made.evictions
    nodes = set(made.placement.values())
    local = live.local(nodes, made.gang_key)
    assert {n.name for n in local.nodes} == nodes
    whole = live.snapshot()
    on_nodes = {p.key for p in whole.pods if p.node_name in nodes}
    members = {whole.pods[i].key for i in whole.group_members[made.gang_key]}
    assert {p.key for p in local.pods} == on_nodes | members
    assert set(local.groups) == set(whole.groups)
    checked = after_victims(live, objects, made, local=True)
    assert checked.feasible and not checked.evictions, checked.reason
    # A pod bound meanwhile into the planned room: the check on the plan's nodes sees it.
    node = sorted(nodes)[0]
    live.apply("ADDED", pod("newcomer", namespace=NAMESPACE, node=node, gpus=8, priority=10**6))
    again = after_victims(live, objects, made, local=True)
    assert not (again.feasible and not again.evictions)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), events=st.integers(0, 40))
def test_a_gang_that_fits_on_its_planned_nodes_fits_in_the_whole_cluster(seed, events):
    """The re-check's local question never says yes where the whole snapshot says no; right after the
    plan (no events) it says yes."""
    rng = random.Random(seed)
    objects = {ident(o): o for o in copy.deepcopy(BASE)}
    live = LiveSnapshot(objects.values())
    made = plan(live.snapshot(), preemptor_name(rng.choice((8, 64))))
    if not made.feasible or not made.evictions:
        return
    for serial in range(events):
        live.apply(*random_event(rng, objects, serial))
    if (
        any(("Pod", key) not in objects for key in made.evictions)
        or made.gang_key not in live.snapshot().groups
    ):
        return  # a victim or the gang is gone: the re-check's cheap checks answer before the engine's
    local = after_victims(live, objects, made, local=True)
    whole = after_victims(live, objects, made, local=False)
    if local.feasible and not local.evictions:
        assert whole.feasible and not whole.evictions, (local.reason, whole.reason)
    if events == 0:
        assert local.feasible and not local.evictions, local.reason


def test_the_background_index_is_ready_after_a_quiet_moment_and_plans_like_a_fresh_parse():
    import time

    objects = {ident(o): o for o in copy.deepcopy(BASE)}
    live = LiveSnapshot(objects.values())
    live.keep_indexed(quiet=0.05)
    try:
        deadline = time.monotonic() + 60  # generous: a loaded 2-core machine
        while not live.ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert live.ready()
        extra = pod(
            "late",
            namespace=NAMESPACE,
            node=next(o for o in BASE if o["kind"] == "Node")["metadata"]["name"],
            gpus=1,
            priority=100,
        )
        live.apply("ADDED", extra)
        objects[ident(extra)] = extra
        while not live.ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert live.ready()
        assert plans(live.snapshot()) == plans(parse_snapshot(list(objects.values())))
    finally:
        live.stop_indexing()


def unbound_event(rng: random.Random, objects: dict, serial: int):
    """A change to pods without a node name only (a new gang's pods, one of them relabelled or gone), to a
    PodGroup none of whose pods has one (a new gang's own, its priority changed, deleted), or, one time in
    ten, any change ``random_event`` makes."""
    if rng.random() < 0.1:
        return random_event(rng, objects, serial)
    unbound = [o for o in objects.values() if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
    groups = [o["metadata"]["name"] for o in objects.values() if o["kind"] == "PodGroup"]
    bound_groups = {
        (o["spec"].get("schedulingGroup") or {}).get("podGroupName")
        for o in objects.values()
        if o["kind"] == "Pod" and o["spec"].get("nodeName")
    }
    pending_groups = [
        o for o in objects.values() if o["kind"] == "PodGroup" and o["metadata"]["name"] not in bound_groups
    ]
    choice = rng.random()
    if choice < 0.1:  # a new gang's own PodGroup
        obj = podgroup(
            f"late-{serial}", namespace=NAMESPACE, min_count=2, priority=rng.choice((100, 250, 400))
        )
        return applied(objects, "ADDED", obj)
    if choice < 0.2 and pending_groups:  # a group without pods on nodes: its priority changed, or gone
        obj = copy.deepcopy(rng.choice(pending_groups))
        if rng.random() < 0.5 or obj["metadata"]["name"].startswith("preemptor-"):  # plans() plans for those
            obj["spec"]["priority"] = rng.choice((100, 250, 400))
            return applied(objects, "MODIFIED", obj)
        return applied(objects, "DELETED", obj)
    if choice < 0.6 or not unbound:
        obj = pod(
            f"pending-{serial}",
            namespace=NAMESPACE,
            gpus=rng.choice((1, 2, 4, 8)),
            group=rng.choice(groups) if rng.random() < 0.8 else None,
            priority=rng.choice((100, 200, 400)),
            # Now and then the newest pod of all: the snapshot's "now" and every unit's lost work move.
            created=rng.choice(("2026-07-01T09:00:00Z", f"2026-07-01T13:{serial % 60:02d}:00Z")),
        )
        kind = "ADDED"
    elif choice < 0.8:
        obj = copy.deepcopy(rng.choice(unbound))
        obj["metadata"].setdefault("labels", {})["serial"] = str(serial)
        kind = "MODIFIED"
    else:
        obj, kind = rng.choice(unbound), "DELETED"
    return applied(objects, kind, obj)


def index_of(snapshot):
    """What an index holds, in plain values: two snapshots of the same objects give the same."""
    units = snapshot.units
    return {
        "pods": [p.key for p in snapshot.pods],
        "first_unbound": snapshot.first_unbound,
        "resources": snapshot.resources,
        "pod_req": snapshot.pod_req.tolist(),
        "pod_node": snapshot.pod_node.tolist(),
        "pods_by_node": snapshot.pods_by_node,
        "group_members": snapshot.group_members,
        "groups": {
            key: (g.priority, g.priority_class, g.parent) for key, g in sorted(snapshot.groups.items())
        },
        "pod_priority": snapshot.pod_priority,
        "free": snapshot.free.tolist(),
        "now": snapshot.now,
        "warnings": snapshot.warnings,
        "units": [
            (
                u.kind,
                u.key,
                u.priority,
                u.pods,
                u.gpus,
                lost,
                u.earliest_start,
                u.tiebreak,
                u.pdb_pods,
                u.node_req_t,
                {n: r.tolist() for n, r in u.node_req.items()},
            )
            for u, lost in zip(units.units, units.gpu_seconds, strict=True)
        ],
        "pod_lost": units.pod_lost.tolist(),
        "pod_unit": units.pod_unit.tolist(),
        "pod_unit_priority": units.pod_unit_priority.tolist(),
        "entries": (units.entry_unit.tolist(), units.entry_node.tolist(), units.entry_req.tolist()),
    }


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), events=st.integers(1, 40))
def test_an_index_patched_for_unbound_pods_equals_a_fresh_one(seed, events):
    rng = random.Random(seed)
    objects = {ident(o): o for o in copy.deepcopy(BASE)}
    live = LiveSnapshot(objects.values())
    live.snapshot()
    for serial in range(events):
        live.apply(*unbound_event(rng, objects, serial))
        if rng.random() < 0.3:
            live.snapshot()
    fresh = parse_snapshot(list(objects.values()))
    assert index_of(live.snapshot()) == index_of(fresh)
    assert plans(live.snapshot()) == plans(fresh)


def test_a_new_gangs_podgroup_and_pods_patch_the_index_and_any_other_change_rebuilds_it():
    objects = copy.deepcopy(BASE)
    live = LiveSnapshot(objects)
    first = live.snapshot()
    group = podgroup("late", namespace=NAMESPACE, min_count=4, priority=400)
    live.apply("ADDED", group)  # its own PodGroup first, as a gang's controller creates it
    gang = [
        pod(
            f"gang-{i}",
            namespace=NAMESPACE,
            gpus=8,
            group="late",
            priority=400,
            created="2026-07-02T00:00:00Z",
        )
        for i in range(4)
    ]
    for obj in gang:
        live.apply("ADDED", obj)
    patched = live.snapshot()
    # The same victim units' layout, the pods with a node name where they were; only "now" moved.
    assert patched.units.node_units is first.units.node_units
    assert patched.now > first.now
    assert {f"{NAMESPACE}/gang-{i}" for i in range(4)} <= {
        p.key for p in patched.pods[patched.first_unbound :]
    }
    assert index_of(patched) == index_of(parse_snapshot([*objects, group, *gang]))
    assert patched.groups[f"{NAMESPACE}/late"].priority == 400
    bound = copy.deepcopy(gang[0])
    bound["spec"]["nodeName"] = next(o["metadata"]["name"] for o in objects if o["kind"] == "Node")
    live.apply("MODIFIED", bound)  # now on a node: a victim unit's layout may change, so a whole index
    rebuilt = live.snapshot()
    assert rebuilt.units.node_units is not first.units.node_units
    assert index_of(rebuilt) == index_of(parse_snapshot([*objects, group, bound, *gang[1:]]))
    group = copy.deepcopy(group)
    group["spec"]["priority"] = 300
    live.apply("MODIFIED", group)  # a group with a pod on a node: its unit's priority moves, a whole index
    again = live.snapshot()
    assert again.units.node_units is not rebuilt.units.node_units
    assert index_of(again) == index_of(parse_snapshot([*objects, group, bound, *gang[1:]]))


def test_a_plan_asked_while_an_earlier_index_is_made_waits_for_it_and_patches_it(monkeypatch):
    import threading

    import scheduler.engine.caching.live as live_module

    objects = copy.deepcopy(BASE)
    live = LiveSnapshot(objects)
    live.snapshot()
    inside, release, made = threading.Event(), threading.Event(), []

    class SlowSnapshot(live_module.Snapshot):
        def __init__(self, parsed):
            made.append(self)
            inside.set()
            release.wait()
            super().__init__(parsed)

    class SeenWaiting(threading.Condition):
        waiting = threading.Event()

        def wait(self, timeout=None):
            self.waiting.set()
            return super().wait(timeout)

    monkeypatch.setattr(live_module, "Snapshot", SlowSnapshot)
    live._changed = SeenWaiting(live._lock)
    terminating = as_terminating(next(o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")))
    live.apply("MODIFIED", terminating)  # a pod on a node: the next index is a whole one
    first = []
    builder = threading.Thread(target=lambda: first.append(live.snapshot()), daemon=True)
    builder.start()
    assert inside.wait(30)
    gang = pod(
        "late-0", namespace=NAMESPACE, gpus=8, group="late", priority=400, created="2026-07-02T00:00:00Z"
    )
    live.apply("ADDED", gang)  # a new gang's pod while that index is being made
    second = []
    planner = threading.Thread(target=lambda: second.append(live.snapshot()), daemon=True)
    planner.start()
    try:
        assert SeenWaiting.waiting.wait(30)  # it waits for the index being made instead of making its own
    finally:
        release.set()
    builder.join(30)
    planner.join(30)
    assert len(made) == 1
    assert second[0].units.node_units is first[0].units.node_units  # the whole index, patched
    others = [o for o in objects if ident(o) != ident(terminating)]
    assert index_of(second[0]) == index_of(parse_snapshot([*others, terminating, gang]))
