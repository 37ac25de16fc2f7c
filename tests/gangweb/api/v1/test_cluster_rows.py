"""The cluster rows are read once per GANGWEB_API_CLUSTER_CACHE_SECONDS, then again in the background
while the older reading is still served: no request waits for a relist. The dashboard's ticker and the
API share the process's one reading of the cluster (gangweb/clusterview/reading.py)."""

from __future__ import annotations

import time

import pytest

from gangweb.clusterview import rows as cluster_rows
from gangweb.dashboard import live
from scheduler.preemption import runtime
from tests.gangweb.api.v1.conftest import world_objects
from tests.scheduler.preemption.builders import FakeCluster, pod, podgroup


def test_an_old_reading_is_served_while_a_new_one_is_read(settings):
    settings.GANGWEB_API_CLUSTER_CACHE_SECONDS = 1
    fake = FakeCluster(world_objects())
    runtime.set_cluster(fake)
    try:
        first = cluster_rows.cluster_view()
        assert "team-c/late" not in first.groups
        for obj in (
            podgroup("team-c", "late", min_count=1, priority=1),
            pod("team-c", "late-0", group="late", priority=1),
        ):
            fake.objects[(obj["kind"], f"team-c/{obj['metadata']['name']}")] = obj
        assert cluster_rows.cluster_view() is first  # young enough
        deadline = time.monotonic() + 30
        while "team-c/late" not in cluster_rows.cluster_view().groups:
            assert time.monotonic() < deadline, "the background reading never came"
            time.sleep(0.1)
        assert cluster_rows.cluster_view().groups["team-c/late"]["state"] == "pending"
    finally:
        runtime.reset_cluster()
        cluster_rows.forget()


class CountedCluster(FakeCluster):
    """A FakeCluster that counts how often it is read."""

    def __init__(self, objects):
        super().__init__(objects)
        self.reads = 0

    def snapshot_objects(self):
        self.reads += 1
        return super().snapshot_objects()


def served_rows(client, admin) -> dict[str, dict]:
    body = client.get("/api/v1/podgroups/", {"limit": 1000}, **admin).json()
    return {row["podGroup"]: row for row in body["results"]}


@pytest.fixture
def counted(settings):
    settings.GANGWEB_API_CLUSTER_CACHE_SECONDS = 60
    fake = CountedCluster(world_objects())
    runtime.set_cluster(fake)
    live.reset()
    yield fake
    runtime.reset_cluster()
    cluster_rows.forget()
    live.reset()


@pytest.mark.django_db
def test_the_api_serves_the_tickers_reading_and_reads_the_cluster_no_more(counted, client, admin):
    """One reading per process: the rows are built from the picture the map published, and a later tick's
    reading becomes the API's next view without the API listing the cluster itself."""
    published = live.refresh()
    served = served_rows(client, admin)
    assert counted.reads == 1
    waiting = {g["key"]: g["reason"] for g in published["gangs"] if g["podGroup"] and g["state"] != "running"}
    assert waiting and {key: served[key]["reason"] for key in waiting} == waiting

    for obj in (
        podgroup("team-c", "late", min_count=1, priority=1),
        pod("team-c", "late-0", group="late", priority=1),
    ):
        counted.objects[(obj["kind"], f"team-c/{obj['metadata']['name']}")] = obj
    live.refresh()
    assert counted.reads == 2
    deadline = time.monotonic() + 30
    while "team-c/late" not in served_rows(client, admin):
        assert time.monotonic() < deadline, "the ticker's reading never reached the API"
        time.sleep(0.1)
    assert counted.reads == 2


@pytest.mark.django_db
def test_the_ticker_publishes_the_apis_fresh_reading(counted, client, admin):
    served = served_rows(client, admin)
    assert counted.reads == 1
    live.tick_and_publish()  # a real cluster's tick: a reading younger than half its interval is the one
    picture, _ = live.current()
    assert counted.reads == 1
    mapped = {g["key"]: g["reason"] for g in picture["gangs"] if g["podGroup"] and g["state"] != "running"}
    assert mapped and {key: served[key]["reason"] for key in mapped} == mapped
