"""The watch cache converges to the server's objects, exactly, whatever the stream does, and never lists on a
timer: one LIST per kind per start, plus one per 410 recovery (the test server's request log counts them)."""

from __future__ import annotations

import time

import pytest

from scheduler.cluster import WatchCache, current_objects, object_key
from scheduler.engine import parse_snapshot, plan
from scheduler.kube.resources import EVENTS_V1, PODS, QUEUE_WATCHED, SNAPSHOT_RESOURCES
from scheduler.preemption.detection import cached_gang_objects, gang_objects, pod_gang
from scheduler.queues.ownership import ownership_marks

from .objects import pod

pytestmark = pytest.mark.timeout(180)


def server_objects(server) -> dict:
    kinds = {r.kind for r in SNAPSHOT_RESOURCES}
    return {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in server.store.dump()
        if o["kind"] in kinds
    }


def cached(cluster) -> dict:
    return {
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
        for o in cluster.cached_objects()
    }


def converged(server, cluster, timeout: float = 30.0) -> None:
    cache_converged(server, cluster, timeout)
    live = cluster.live_snapshot().snapshot()
    fresh = parse_snapshot(list(server_objects(server).values()))
    assert [p.key for p in live.pods] == [p.key for p in fresh.pods]
    assert (live.free == fresh.free).all()


def label(obj: dict) -> tuple:
    return (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])


def cache_converged(server, cluster, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cached(cluster) == server_objects(server):
            break
        time.sleep(0.05)
    assert cached(cluster) == server_objects(server)


def lists(server) -> list[str]:
    paths = {r.collection_path() for r in (*SNAPSHOT_RESOURCES, EVENTS_V1, *QUEUE_WATCHED)}
    return [
        r["path"]
        for r in server.requests(method="GET")
        if r["path"] in paths and "watch=" not in (r["query"] or "")
    ]


def test_the_adapter_is_a_watch_cache_and_readers_use_it_without_listing(server, cluster):
    assert isinstance(cluster, WatchCache)
    cluster.start()
    server.state.requests.clear()
    for _ in range(20):
        assert current_objects(cluster)
        cluster.live_snapshot().snapshot()
    assert lists(server) == []


def test_a_dropped_stream_resumes_without_a_list(server, cluster):
    cluster.start()
    started_lists = len(lists(server))
    for round_ in range(3):
        server.drop_watches()
        server.store.create(PODS, pod(f"after-drop-{round_}"))
        converged(server, cluster)
    assert len(lists(server)) == started_lists  # resumed from the last resourceVersion every time


def test_a_410_relists_once_and_converges(server, cluster):
    cluster.start()
    reflector = cluster.reflector(PODS)
    server.faults.fail("/api/v1/pods$", 500, method="GET", times=None)
    server.drop_watches()
    server.store.delete(PODS, "team-a", "solo")
    server.store.create(PODS, pod("while-away"))
    server.expire_watch_window()
    server.faults.clear()
    converged(server, cluster)
    assert reflector.expired >= 1


def indexed_as_a_scan_files_them(cluster, func, values: set[str]) -> None:
    """Each of ``values`` and each value a scan of the cached pods finds: the index answers the pods a scan
    files under it (none for a value no pod has any more)."""
    filed: dict[str, set[str]] = {}
    for obj in cluster.cached_objects(("Pod",)):
        try:
            marks = func(obj)
        except AttributeError:  # the malformed pod below: filed nowhere
            marks = ()
        for value in marks:
            filed.setdefault(value, set()).add(object_key(obj))
    values |= set(filed)
    for value in values:
        got = {object_key(o) for o in cluster.cached_indexed("Pod", func, value)}
        assert got == filed.get(value, set()), value


def test_the_indexes_answer_as_a_scan_through_changes_deletions_and_a_410(server, cluster):
    server.store.validator = None  # pods change group here, which the real API server would refuse
    cluster.start()
    indexes = {pod_gang: set(), ownership_marks: set()}
    for func, values in indexes.items():
        indexed_as_a_scan_files_them(cluster, func, values)  # made here, from the cache; kept from now on
    for i in range(6):
        server.store.create(PODS, pod(f"member-{i}", group=f"gang-{i % 3}"))
    server.store.patch(
        PODS,
        "team-a",
        "member-0",
        "application/merge-patch+json",
        {
            "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "main"}},
            "spec": {"schedulingGroup": {"podGroupName": "gang-9"}},
        },
    )
    server.store.delete(PODS, "team-a", "member-1")
    odd = pod("odd")
    odd["spec"]["schedulingGroup"] = "not-a-map"  # the index's function raises on it: the watch goes on
    server.store.create(PODS, odd)
    server.store.create(PODS, pod("after-odd", group="gang-0"))
    cache_converged(server, cluster)  # the live snapshot refuses the malformed pod; the cache keeps it
    for func, values in indexes.items():
        indexed_as_a_scan_files_them(cluster, func, values)
    assert {object_key(o) for o in cluster.cached_indexed("Pod", pod_gang, "team-a/gang-9")} == {
        "team-a/member-0"
    }

    # Changes while the watch is away and the server forgot where it was: the relist re-files every pod.
    server.faults.fail("/api/v1/pods$", 500, method="GET", times=None)
    server.drop_watches()
    server.store.delete(PODS, "team-a", "member-0")
    server.store.create(PODS, pod("while-away", group="gang-2", labels={"kueue.x-k8s.io/managed": "true"}))
    server.expire_watch_window()
    server.faults.clear()
    cache_converged(server, cluster)  # the live snapshot refuses the malformed pod; the cache keeps it
    assert cluster.reflector(PODS).expired >= 1
    for func, values in indexes.items():
        indexed_as_a_scan_files_them(cluster, func, values)
    assert cluster.cached_indexed("Pod", pod_gang, "team-a/gang-9") == []
    assert indexes[pod_gang] >= {"team-a/gang-0", "team-a/gang-9"} and "signal" in indexes[ownership_marks]


def test_a_bookmark_only_period_keeps_the_cache_and_lists_nothing(server, cluster):
    cluster.start()
    before = dict(cluster.resource_versions())
    started_lists = len(lists(server))
    server.store.create(
        PODS, pod("tick")
    )  # moves the global resourceVersion; other kinds hear only bookmarks

    def bookmarked() -> bool:
        after = cluster.resource_versions()
        return all(int(after[p]) > int(before[p]) for p in ("nodes", "podgroups"))

    deadline = time.monotonic() + 30
    while not bookmarked() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bookmarked(), "the quiet kinds never heard a bookmark"
    converged(server, cluster)
    assert len(lists(server)) == started_lists


@pytest.mark.timeout(400)
def test_a_burst_of_ten_thousand_events_converges_exactly(server, cluster):
    server.store.validator = None  # the stream is under test here, not the objects' schema
    cluster.start()
    started_lists = len(lists(server))
    for i in range(5000):
        server.store.create(PODS, pod(f"burst-{i}", node=None))
    for i in range(0, 5000, 2):
        server.store.patch(
            PODS, "team-a", f"burst-{i}", "application/merge-patch+json", {"spec": {"nodeName": "node-1"}}
        )
    for i in range(1, 5000, 2):
        server.store.delete(PODS, "team-a", f"burst-{i}")
    converged(server, cluster, timeout=120)
    assert cluster.reflector(PODS).expired == 0 and len(lists(server)) == started_lists
    group = next(o for o in server.store.dump() if o["kind"] == "PodGroup")
    key = f"{group['metadata']['namespace']}/{group['metadata']['name']}"
    live = cluster.live_snapshot().snapshot()
    assert (
        plan(live, key).to_dict()
        == plan(parse_snapshot(list(server_objects(server).values())), key).to_dict()
    )


def preempted_event(i: int, reason: str = "Preempted") -> dict:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"victim-{i}.{reason.lower()}", "namespace": "default"},
        "eventTime": "2026-11-30T08:05:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-a",
        "action": "Preempting",
        "reason": reason,
        "type": "Normal",
        "note": "Preempted by podgroup 1234 on node cluster",
        "regarding": {"kind": "Pod", "namespace": "default", "name": f"victim-{i}", "apiVersion": "v1"},
    }


def test_one_list_per_kind_over_a_long_run(server, cluster):
    """Observe mode's Preempted Events too: listed at the first read, then watched (field selector)."""
    cluster.start()
    reflectors = [cluster.reflector(r) for r in SNAPSHOT_RESOURCES]
    for i in range(60):  # reads, changes, dropped streams: never a list
        server.store.create(PODS, pod(f"long-{i}"))
        current_objects(cluster)
        cluster.list_events(reason="Preempted")
        if i % 10 == 0:
            server.store.create(EVENTS_V1, preempted_event(i))
            server.store.create(EVENTS_V1, preempted_event(i, reason="Scheduled"))  # not this watch's
        if i % 20 == 0:
            opened = [r.watches for r in reflectors]
            server.drop_watches()
            deadline = time.monotonic() + 30  # every kind watches again, from where it was
            while not all(r.watches > n for r, n in zip(reflectors, opened, strict=True)):
                assert time.monotonic() < deadline, "a dropped watch was never opened again"
                time.sleep(0.02)
    converged(server, cluster)
    want = sorted(o["metadata"]["name"] for o in server.store.dump() if o.get("reason") == "Preempted")
    got: list[str] = []
    until = time.monotonic() + 30
    while got != want and time.monotonic() < until:
        got = sorted(e["metadata"]["name"] for e in cluster.list_events(reason="Preempted"))
        time.sleep(0.05)
    assert got == want and len(want) > 1
    # + the queue kinds the test server serves, and the Events of reason Preempted, once each
    assert len(lists(server)) == len(SNAPSHOT_RESOURCES) + len(QUEUE_WATCHED) + 1


@pytest.mark.timeout(400)
def test_a_paged_start_up_list_of_a_synthetic_cluster_plans_like_a_fresh_parse(server, cluster):
    """The start-up list spans several pages of ``LIST_PAGE_SIZE``; the cache holds every object of every
    page, and the live snapshot plans the benchmark's three preemptors exactly like a fresh parse of the
    server's objects (what ``bench watch`` compares its real worker's evictions against)."""
    from scheduler.kube.apis import LIST_PAGE_SIZE
    from testkit.synthetic import PREEMPTORS, preemptor_name, synthetic_cluster

    server.store.validator = None
    server.load(synthetic_cluster(600))
    assert sum(1 for o in server.store.dump() if o["kind"] == "Pod") > 2 * LIST_PAGE_SIZE
    cluster.start(timeout=120)
    pod_pages = [p for p in lists(server) if p.endswith("/pods")]
    assert len(pod_pages) >= 3  # first page + continues
    converged(server, cluster, timeout=120)
    live = cluster.live_snapshot().snapshot()
    fresh = parse_snapshot(list(server_objects(server).values()))
    outcomes = set()
    for gpus, _, _ in PREEMPTORS:
        mine, theirs = plan(live, preemptor_name(gpus)).to_dict(), plan(fresh, preemptor_name(gpus)).to_dict()
        assert mine == theirs
        # what the watch trigger judges the gang by, read through the index of pods by gang
        judged = cached_gang_objects(cluster, preemptor_name(gpus))
        assert sorted(map(label, judged)) == sorted(
            map(label, gang_objects(cluster.cached_objects(), preemptor_name(gpus)))
        )
        assert sum(o["kind"] == "Pod" for o in judged) > 0
        outcomes.add(mine["outcome"])
    assert "preempt" in outcomes  # the comparison covers evictions, not only "fits"
