"""Broken gangs recorded as they happen: a watch cache over the Kubernetes API test server sees a member
killed or its node going NotReady, and the ledger says ``gang.broken`` (with the GPUs held) once, then
``gang.recovered``; a gang deleted pod by pod is not broken."""

from __future__ import annotations

import time

import pytest

from gangweb.metrics import REGISTRY
from kubetestserver import KubeTestServer
from scheduler.kube import KubeCluster
from scheduler.kube.resources import NODES, PODS
from scheduler.preemption import healthwatch
from scheduler.preemption.models import BrokenGang, LedgerEntry
from tests.scheduler.kube.objects import node, pod, podgroup, priority_class

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def objects() -> list[dict]:
    return [
        node("node-1"),
        node("node-2"),
        priority_class("batch-low", 100),
        podgroup("train", min_count=4),
        *(pod(f"train-{i}", group="train", node=f"node-{i % 2 + 1}") for i in range(4)),
        podgroup("solo-gang", min_count=1),
        pod("solo-0", group="solo-gang", node="node-1"),
    ]


@pytest.fixture
def watched(tmp_path, settings):
    settings.GANGWEB_BROKEN_SETTLE_SECONDS = 0.3
    with KubeTestServer(bookmark_interval=0.2) as server:
        server.load(objects())
        cluster = KubeCluster.from_kubeconfig(
            server.write_kubeconfig(tmp_path / "kubeconfig"), timeout=(2.0, 5.0), watch_timeout=30
        )
        cluster.start(wait=False)
        healthwatch.watch(cluster)  # what runtime.get_cluster does with every cluster it builds
        cluster.wait_synced()
        try:
            yield server, cluster
        finally:
            cluster.close()


def entries(kind: str | None = None) -> list[LedgerEntry]:
    rows = LedgerEntry.objects.filter(kind__startswith="gang.").order_by("id")
    return list(rows.filter(kind=kind) if kind else rows)


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("not reached in time")


def set_ready(server, name: str, status: str) -> None:
    def change(obj: dict) -> None:
        obj["status"]["conditions"] = [{"type": "Ready", "status": status}]

    server.store.mutate(NODES, None, name, change, subresource="status")


def test_a_member_killed_is_recorded_broken_once_with_the_gpus_held_then_recovered(watched):
    server, cluster = watched
    recorder = healthwatch.recorder_for(cluster)
    wait_for(lambda: recorder.watch.health("team-a/train"))  # judged from the first list
    assert recorder.watch.broken() == []
    server.store.delete(PODS, "team-a", "train-0", grace_period_seconds=0)

    broken = wait_for(lambda: entries("gang.broken"))
    assert [(e.namespace, e.name) for e in broken] == [("team-a", "train")]
    assert broken[0].data["heldGpus"] == 3 and broken[0].data["causes"] == ["member-lost"]
    assert "3 of 4 members run" in broken[0].message
    episode = BrokenGang.objects.get()
    assert episode.recovered_at is None and episode.held_gpus == 3
    # the web process's /metrics reads the open episodes
    assert REGISTRY.get_sample_value("gangweb_broken_gangs") == 1
    assert REGISTRY.get_sample_value("gangweb_broken_gang_gpus") == 3

    server.store.create(PODS, pod("train-0", group="train", node="node-1"))  # the controller restarts it
    recovered = wait_for(lambda: entries("gang.recovered"))
    assert [(e.namespace, e.name) for e in recovered] == [("team-a", "train")]
    assert [e.kind for e in entries()] == ["gang.broken", "gang.recovered"]
    episode.refresh_from_db()
    assert episode.recovered_at is not None
    assert REGISTRY.get_sample_value("gangweb_broken_gangs") == 0


def test_a_node_going_not_ready_breaks_the_gangs_on_it(watched):
    server, _ = watched
    set_ready(server, "node-2", "Unknown")
    broken = wait_for(lambda: entries("gang.broken"))
    assert [(e.name, e.data["causes"], e.data["running"]) for e in broken] == [
        ("train", ["node-not-ready"], 2)
    ]
    set_ready(server, "node-2", "True")
    wait_for(lambda: entries("gang.recovered"))


def test_a_gang_deleted_pod_by_pod_is_not_broken(watched):
    server, cluster = watched
    for i in range(4):
        server.store.delete(PODS, "team-a", f"train-{i}", grace_period_seconds=0)
    # a marker after the deletions: once the cache has it, the deletions were all judged
    server.store.delete(PODS, "team-a", "solo-0", grace_period_seconds=0)
    wait_for(lambda: cluster.reflector(PODS).get("team-a/solo-0") is None)
    recorder = healthwatch.recorder_for(cluster)
    wait_for(lambda: recorder.watch.health("team-a/train").held_gpus == 0)
    recorder.drain()  # every change handed to the recorder: dropped, as none held
    assert entries() == []


def test_every_process_records_alike_and_a_lagging_one_undoes_nothing():
    from scheduler.health import LOST, GangHealth
    from scheduler.preemption.ledger.health import record

    def judged(running: int, revision: int) -> GangHealth:
        return GangHealth(
            "team-a", "train", 4, running, running * 8, (LOST,) if running < 4 else (), False, revision
        )

    assert record(judged(3, 10)) is not None
    assert record(judged(3, 10)) is None  # another process saw the same break
    assert record(judged(4, 20)) is not None  # recovered
    assert record(judged(3, 15)) is None  # a process whose cache lags: older than what is recorded
    assert record(judged(3, 25)) is not None  # broken again, later
    assert [e.kind for e in entries()] == ["gang.broken", "gang.recovered", "gang.broken"]
