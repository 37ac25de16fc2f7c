"""The demo's simulation shows idle GPU time: a running gang loses a member and stays broken for a while,
its GPUs and an idle notebook-like pod report no activity in dcgm-exporter's shape, busy gangs report work."""

from __future__ import annotations

from scheduler import activity, health, podstate
from scheduler.simulation import SimulatedCluster, SteppedClock
from scheduler.simulation.cluster import LOSS_OFFSET, LOST_TICKS


def test_a_gang_loses_a_member_is_broken_for_a_while_and_its_gpus_do_nothing():
    cluster = SimulatedCluster(64, 7, clock=SteppedClock())
    cluster.loss_ticks = 40
    changes = []
    for _ in range(LOSS_OFFSET):
        changes += cluster.tick()
    [lost] = [c for c in changes if c["type"] == "member-lost"]
    objects = cluster.snapshot_objects()
    judged = health.judge_all(objects)[lost["podGroup"]]
    assert judged.broken and judged.causes == (health.LOST,) and judged.held_gpus > 0

    series = cluster.dcgm_series()
    assert {name for name, _, _ in series} == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    assert all(
        {"gpu", "UUID", "modelName", "Hostname", "namespace", "pod"} <= set(labels) for _, labels, _ in series
    )
    joined = activity.join(activity.count_idle(series, 0.05), podstate.bound_by_key(objects), objects)
    namespace = lost["podGroup"].partition("/")[0]
    members = {
        f"{namespace}/{o['metadata']['name']}"
        for o in objects
        if podstate.gang_key_of_pod(o) == lost["podGroup"]
    }
    assert sum(joined.pods.get(p, 0) for p in members) == judged.held_gpus  # a broken gang's GPUs idle
    assert joined.unknown == 0
    assert len(joined.pods) > len(members)  # some notebook-like pods idle too
    busy = [v for _, labels, v in series if f"{labels['namespace']}/{labels['pod']}" not in joined.pods]
    assert busy and min(busy) >= 0.6  # the rest work

    for _ in range(LOST_TICKS + 1):  # then its controller restarts it (or it ends meanwhile)
        cluster.tick()
    after = health.judge_all(cluster.snapshot_objects()).get(lost["podGroup"])
    assert after is None or not after.broken
