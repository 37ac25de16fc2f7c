"""Fixtures for the pipeline tests: a scripted in-memory cluster, captured live events, a planned request."""

from __future__ import annotations

import pytest

from scheduler.preemption import ledger, runtime
from tests.scheduler.preemption.builders import FakeCluster, small_cluster
from tests.scheduler.preemption.workers import run_api_server


@pytest.fixture
def api_server(tmp_path):
    """The Kubernetes API test server in its own process, reached through a kubeconfig."""
    yield from run_api_server(tmp_path)


@pytest.fixture
def cluster():
    fake = FakeCluster(small_cluster())
    runtime.set_cluster(fake)
    yield fake
    runtime.reset_cluster()


@pytest.fixture
def planned_request(cluster):
    """A request for team-a/train, planned in process against the fake cluster; returns (request, plan)."""

    from scheduler.preemption import planning

    def make(mode: str = "enforce", policy: str = "gangweb"):
        request, _ = ledger.open_request("team-a", "train", mode=mode, policy=policy, trigger="test")
        ledger.begin_planning(request.pk)
        result = planning.compute(cluster.snapshot_objects(), request.podgroup, policy)
        stored = ledger.record_plan(
            request.pk, result.plan, cost=result.cost, pods=result.pods, planning_seconds=result.seconds
        )
        stored.request.refresh_from_db()
        return stored.request, stored

    return make
