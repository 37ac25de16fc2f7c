"""The read-path benchmark runs end to end and leaves nothing behind (figures: docs, not asserts)."""

from __future__ import annotations

import pytest

from bench import api as bench
from scheduler.preemption import runtime
from scheduler.preemption.models import LedgerEntry, PreemptionRequest
from scheduler.simulation import SimulatedCluster

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_timed_call_answers_and_the_rows_are_removed(settings):
    runtime.set_cluster(SimulatedCluster(nodes=16, seed=7))
    try:
        rows = bench.run(requests=3, victims=9, repeat=2, podgroups=50)
    finally:
        runtime.reset_cluster()
    calls = [row["call"] for row in rows]
    assert "GET /api/requests/{id}/ (9 evictions)" in calls and "POST /api/plan/ (simulated)" in calls
    assert "GET /api/v1/podgroups/" in calls and "POST /api/v1/simulate/ 3 policies (simulated)" in calls
    assert all(row["bytes"] > 0 and row["p99_ms"] >= row["p50_ms"] > 0 for row in rows)
    assert runtime.get_cluster().name != "bench"  # the settings' cluster is back
    assert not PreemptionRequest.objects.exists() and not LedgerEntry.objects.exists()


def test_without_postgresql_it_says_so(monkeypatch):
    from django.core.management import CommandError, call_command

    monkeypatch.setenv("DATABASE_URL", "")
    with pytest.raises(CommandError, match="set DATABASE_URL to a PostgreSQL database"):
        call_command("bench", "api", "--repeat", "1")
