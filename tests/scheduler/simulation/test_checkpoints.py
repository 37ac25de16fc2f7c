"""The simulated workloads checkpoint as real ones would (examples/notice/train.py): a third every
CHECKPOINT_TICKS, a third when gangweb gives notice, a third never; each save is the PodGroup's
gangweb.io/last-checkpoint, as the pipeline reads it."""

from __future__ import annotations

from scheduler.cluster import NOTICE_DEADLINE_ANNOTATION
from scheduler.engine.checkpoints import CHECKPOINT_ANNOTATION
from scheduler.simulation import SimulatedCluster, SteppedClock
from scheduler.simulation.cluster import CHECKPOINT_TICKS


def running_by_kind(cluster: SimulatedCluster) -> dict[str, str]:
    running = [g for g in cluster._gangs.values() if g.started_tick is not None]
    return {
        kind: next(g.key for g in running if g.checkpoints == kind) for kind in ("every", "notice", "never")
    }


def annotations(cluster: SimulatedCluster, key: str) -> dict[str, str]:
    namespace, name = key.split("/")
    group = cluster.get_object("scheduling.k8s.io/v1beta1", "PodGroup", namespace, name)
    return group["metadata"].get("annotations") or {}


def test_a_notice_is_answered_by_the_gangs_that_save_on_notice_only():
    cluster = SimulatedCluster(32, 7, clock=SteppedClock())
    cluster.tick()
    gangs = running_by_kind(cluster)
    for key in gangs.values():
        namespace, name = key.split("/")
        assert cluster.annotate(
            "scheduling.k8s.io/v1beta1",
            "PodGroup",
            namespace,
            name,
            {NOTICE_DEADLINE_ANNOTATION: "2026-01-05T09:00:00Z"},
        )
    changes = cluster.tick()
    saved = [c for c in changes if c["type"] == "gang-checkpointed"]
    assert [c["podGroup"] for c in saved if c["onNotice"]] == [gangs["notice"]]
    assert CHECKPOINT_ANNOTATION in annotations(cluster, gangs["notice"])
    assert CHECKPOINT_ANNOTATION not in annotations(cluster, gangs["never"])
    # Once per notice: the next tick saves nothing more for it.
    assert not [c for c in cluster.tick() if c["type"] == "gang-checkpointed" and c["onNotice"]]


def test_gangs_that_save_every_few_minutes_do_so_and_the_others_not():
    cluster = SimulatedCluster(32, 7, clock=SteppedClock())
    for _ in range(CHECKPOINT_TICKS + 2):
        cluster.tick()
    saved = {
        g.checkpoints for g in cluster._gangs.values() if CHECKPOINT_ANNOTATION in annotations(cluster, g.key)
    }
    assert saved == {"every"}
