"""The cluster rows are read once per GANGWEB_API_CLUSTER_CACHE_SECONDS, then again in the background
while the older reading is still served: no request waits for a relist."""

from __future__ import annotations

import time

from gangweb.api.v1.queries import cluster
from scheduler.preemption import runtime
from tests.gangweb.api.v1.conftest import world_objects
from tests.scheduler.preemption.builders import FakeCluster, pod, podgroup


def test_an_old_reading_is_served_while_a_new_one_is_read(settings):
    settings.GANGWEB_API_CLUSTER_CACHE_SECONDS = 1
    fake = FakeCluster(world_objects())
    runtime.set_cluster(fake)
    try:
        first = cluster.cluster_view()
        assert "team-c/late" not in first.groups
        for obj in (
            podgroup("team-c", "late", min_count=1, priority=1),
            pod("team-c", "late-0", group="late", priority=1),
        ):
            fake.objects[(obj["kind"], f"team-c/{obj['metadata']['name']}")] = obj
        assert cluster.cluster_view() is first  # young enough
        deadline = time.monotonic() + 30
        while "team-c/late" not in cluster.cluster_view().groups:
            assert time.monotonic() < deadline, "the background reading never came"
            time.sleep(0.1)
        assert cluster.cluster_view().groups["team-c/late"]["state"] == "pending"
    finally:
        runtime.reset_cluster()
        cluster.forget()
