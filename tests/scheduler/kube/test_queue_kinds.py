"""The adapter reads the queue managers' kinds a cluster serves: found by discovery, listed once, then
watched like the snapshot kinds (no LIST after the start), so the queue read model and the ownership
signals that need a queue object (Kueue's Workload owner) work on a live cluster; a kind the cluster does
not serve costs no list at all."""

from __future__ import annotations

import copy

import pytest

from kubetestserver import KubeTestServer
from scheduler.engine import parse_snapshot
from scheduler.kube import KubeCluster
from scheduler.kube.resources import QUEUE_RESOURCES, QUEUE_WATCHED
from scheduler.preemption.planning import cached_queue_owners, queue_owners
from scheduler.queues import read_queues
from tests.scheduler.queues.conftest import load_objects

pytestmark = pytest.mark.timeout(120)

KUEUE_CQ = next(r for r in QUEUE_RESOURCES if r.kind == "ClusterQueue")


def _without_queue_labels(objects: list[dict]) -> list[dict]:
    """The Kueue fixture with its pods' Kueue labels taken off: only the Workload's owner (the Job) ties the
    running pods to Kueue, as for a Job whose pods Kueue's webhook did not label."""
    out = copy.deepcopy(objects)
    for obj in out:
        if obj.get("kind") == "Pod":
            labels = obj["metadata"].get("labels") or {}
            obj["metadata"]["labels"] = {
                k: v for k, v in labels.items() if not k.startswith("kueue.x-k8s.io/")
            }
    return out


@pytest.fixture
def kueue_server():
    with KubeTestServer(bookmark_interval=0.2) as server:
        _, skipped = server.store.load(_without_queue_labels(load_objects("kueue")))
        assert not skipped, skipped
        yield server


def _cluster(server, tmp_path) -> KubeCluster:
    return KubeCluster.from_kubeconfig(
        server.write_kubeconfig(tmp_path / "kubeconfig"), timeout=(2.0, 5.0), watch_timeout=30
    )


def _queue_lists(server) -> list[str]:
    plurals = tuple(f"/{r.group}/{r.version}/{r.plural}" for r in QUEUE_WATCHED)
    return [
        r["path"]
        for r in server.requests(method="GET")
        if r["path"].endswith(plurals) and "watch=" not in (r["query"] or "")
    ]


def test_a_live_cluster_shows_its_kueue_queues_and_owners_without_listing_again(kueue_server, tmp_path):
    cluster = _cluster(kueue_server, tmp_path).start()
    try:
        objects = cluster.cached_objects()
        expected = load_objects("kueue")
        assert (
            read_queues(objects, parse_snapshot(objects)).to_dict()
            == read_queues(expected, parse_snapshot(expected)).to_dict()
        )
        # Kueue's Workload-owner signal: the running pods of the admitted Workload's Job are Kueue's.
        owners = queue_owners(objects, parse_snapshot(objects))
        assert {k: (o.system, o.object) for k, o in owners.items()} == {
            f"team-a/train-a-{i}": ("kueue", "Workload team-a/job-train-a-7c1f2") for i in range(3)
        }
        listed = len(_queue_lists(kueue_server))
        assert listed == len(QUEUE_WATCHED)  # each served queue kind listed once
        # a ClusterQueue created now reaches the cache through the watch
        team_c = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "team-c"},
            "spec": {"namespaceSelector": {}, "resourceGroups": []},
        }
        kueue_server.store.create(KUEUE_CQ, team_c)
        assert cluster.wait_for(
            lambda objs: any(o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-c" for o in objs),
            timeout=30,
        )
        for _ in range(5):
            cluster.cached_objects()
        assert len(_queue_lists(kueue_server)) == listed
    finally:
        cluster.close()


def test_kinds_the_cluster_does_not_serve_are_never_listed(kueue_server, tmp_path):
    kueue_server.faults.fail(r"^/apis/kueue\.x-k8s\.io/v1beta2$", 404, method="GET", times=None)
    cluster = _cluster(kueue_server, tmp_path).start()
    try:
        objects = cluster.cached_objects()
        assert not [o for o in objects if str(o.get("apiVersion", "")).startswith("kueue.x-k8s.io/")]
        assert not [p for p in _queue_lists(kueue_server) if "/kueue.x-k8s.io/" in p]
        assert {r.group for r in cluster.served_queue_kinds()} == {
            "scheduling.volcano.sh",
            "scheduling.run.ai",
        }
    finally:
        cluster.close()


def test_discovery_is_retried_until_the_server_answers(kueue_server, tmp_path):
    kueue_server.faults.fail(r"^/apis/kueue\.x-k8s\.io/v1beta2$", 503, method="GET", times=3)
    cluster = _cluster(kueue_server, tmp_path).start(timeout=60)
    try:
        asked = [
            r for r in kueue_server.requests(method="GET") if r["path"] == "/apis/kueue.x-k8s.io/v1beta2"
        ]
        assert len(asked) == 4  # three failures, then the answer
        assert any(o["kind"] == "ClusterQueue" for o in cluster.cached_objects())
    finally:
        cluster.close()


@pytest.mark.parametrize("name", ["kueue", "kueue-unlabelled", "volcano", "kai", "yunikorn"])
def test_the_owners_read_through_the_caches_index_are_those_of_a_scan(name, tmp_path):
    """Planning reads the pods a signal could match through the watch cache's index (``ownership_marks``):
    the same owners as a pass over every cached object, for each system's fixture."""
    objects = load_objects(name.removesuffix("-unlabelled"))
    if name.endswith("-unlabelled"):
        objects = _without_queue_labels(objects)  # only the Workload's owner ties the pods to Kueue
    with KubeTestServer(bookmark_interval=0.2) as server:
        server.store.load(objects)
        cluster = _cluster(server, tmp_path).start()
        try:
            cached = cluster.cached_objects()
            snapshot = parse_snapshot(cached)
            scanned = queue_owners(cached, snapshot)
            assert scanned, "the fixture has running pods its queue manager owns"
            assert cached_queue_owners(cluster, snapshot) == scanned
        finally:
            cluster.close()
