"""The process's one reading of the cluster (gangweb/clusterview/reading.py): taken once for every reader
that asks within its max age, and paced beside requests without changing what it draws."""

from __future__ import annotations

import pytest
from django.core.signals import request_finished, request_started

from gangweb.clusterview import reading
from scheduler.simulation import SimulatedCluster


class CountedSimulation(SimulatedCluster):
    reads = 0

    def snapshot_objects(self):
        self.reads += 1
        return super().snapshot_objects()


def test_readers_within_the_max_age_share_one_reading_of_their_cluster():
    cluster = CountedSimulation(nodes=16, seed=5)
    reading.forget()
    try:
        first = reading.take(cluster, max_age=60)
        assert reading.take(cluster, max_age=60) is first
        assert reading.latest(cluster) is first and cluster.reads == 1
        again = reading.take(cluster, max_age=0)
        assert again is not first and cluster.reads == 2 and reading.latest(cluster) is again
        other = CountedSimulation(nodes=16, seed=5)
        assert reading.latest(other) is None  # a reading is of one cluster object
        assert reading.take(other, max_age=60).cluster is other and other.reads == 1
    finally:
        reading.forget()


def drawn(picture: dict) -> dict:
    """What the map draws, without the clock's part (the time, how long gangs have waited)."""
    gangs = [{k: v for k, v in g.items() if k != "waitingSeconds"} for g in picture["gangs"]]
    return {
        "nodes": picture["nodes"],
        "domains": picture["domains"],
        "gangs": gangs,
        "totals": picture["totals"],
    }


# Django's own receivers of the request signals check the database connection a test before may have left.
@pytest.mark.django_db
def test_a_paced_build_draws_the_same_picture_and_ends_while_a_request_never_does():
    cluster = SimulatedCluster(nodes=64, seed=5)
    reading.forget()
    plain = reading.take(cluster, max_age=0).picture
    serving = reading.serving()
    request_started.send(sender=None)  # a request that is still being served when the build ends
    try:
        assert reading.serving() == serving + 1
        paced = reading.take(cluster, max_age=0, paced=True)
    finally:
        request_finished.send(sender=None)
        reading.forget()
    assert reading.serving() == serving
    assert drawn(paced.picture) == drawn(plain)
    assert paced.picture["gangs"] and paced.picture["totals"]["allocatedGpus"] > 0
