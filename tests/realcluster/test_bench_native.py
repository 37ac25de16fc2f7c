"""``manage.py bench native --json`` on the real control plane: kube-scheduler's own workload-aware preemption
and gangweb's pipeline (a real Celery worker, the Eviction API) on the same KWOK cluster, side by side.

Behaviour, not timing: the contract's keys, gangweb's evictions equal to its ledger's, no gang of
``disruptionMode: all`` left half-evicted by gangweb, every gang placed by both policies, and each policy's
totals the sum of what its gangs' trials saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

CONTRACT = ("evicted_pods", "gpu_hours_lost", "broken_gangs", "seconds_to_placed_p50")


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_bench_native_reports_both_policies_consistently():
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get("REDIS_URL"):
        pytest.fail(
            "bench native needs DATABASE_URL (PostgreSQL, gangweb's ledger) and REDIS_URL (the worker)"
        )
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "bench",
            "native",
            "--nodes",
            "64",
            "--gangs",
            "8",
            "64",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    figures = json.loads(done.stdout)
    for policy in ("native", "gangweb"):
        assert set(CONTRACT) <= set(figures[policy]), figures[policy]
        runs = [r for r in figures["runs"] if r["policy"] == policy]
        assert [r["nodes"] for r in runs] == [64]
        assert [g["gpus"] for g in runs[0]["gangs"]] == [8, 64]
        # Every gang needed room that only preemption could make (whole-node pods, no free node), and got it.
        assert all(g["placed"] and g["evicted_pods"] > 0 for g in runs[0]["gangs"]), runs[0]["gangs"]
        assert figures[policy]["evicted_pods"] == sum(g["evicted_pods"] for g in runs[0]["gangs"])
        assert 0 < figures[policy]["victim_units"] <= figures[policy]["evicted_pods"]
        assert figures[policy]["gpu_hours_lost"] > 0
        assert figures[policy]["seconds_to_placed_p50"] > 0
    gangweb = figures["gangweb"]
    assert gangweb["broken_gangs"] == 0, figures["runs"]
    assert gangweb["ledger_evicted_pods"] == gangweb["evicted_pods"], gangweb
    assert "ledger_evicted_pods" not in figures["native"]
