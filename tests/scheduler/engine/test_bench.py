"""The synthetic clusters and ``manage.py gang bench`` (shape of the output, not timings)."""

import json
import subprocess
import sys
from pathlib import Path

from scheduler.engine import parse_snapshot, plan
from testkit.synthetic import PREEMPTORS, preemptor_name, synthetic_cluster

ROOT = Path(__file__).resolve().parents[3]


def test_synthetic_cluster_is_busy_fragmented_and_deterministic():
    objects = synthetic_cluster(400, seed=3)
    assert objects == synthetic_cluster(400, seed=3)
    snap = parse_snapshot(objects)
    gpus_total, gpus_free = int(snap.gpus(snap.alloc).sum()), int(snap.gpus(snap.free).sum())
    assert 0.85 <= 1 - gpus_free / gpus_total <= 0.95
    assert int(snap.gpus(snap.free).max()) < 8  # an 8-GPU pod never fits without preemption
    racks = {n.labels["rack"] for n in snap.nodes}
    assert len(racks) == 400 // 16
    priorities = {snap.group_priority(g) for g in snap.groups.values()}
    assert {100, 200, 300, 400} <= priorities
    modes = [g.disruption for k, g in snap.groups.items() if "preemptor" not in k]
    assert 0.2 < modes.count("single") / len(modes) < 0.45
    for gpus, count, topology in PREEMPTORS:
        group = snap.groups[preemptor_name(gpus)]
        assert group.min_count == count and group.topology_key == topology


def test_every_policy_plans_the_synthetic_preemptors():
    snap = parse_snapshot(synthetic_cluster(400, seed=5))
    for gpus, _, _ in PREEMPTORS:
        results = {p: plan(snap, preemptor_name(gpus), p) for p in ("kep5710", "gangweb", "legacy")}
        assert results["kep5710"].feasible and results["gangweb"].feasible
        assert results["gangweb"].cost <= results["kep5710"].cost


def test_bench_command_prints_one_json_object():
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "gang",
            "bench",
            "--nodes",
            "160",
            "--repeats",
            "1",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    (cluster,) = data["clusters"]
    assert cluster["nodes"] == 160 and cluster["load_s"] > 0
    runs = {(r["preemptor_gpus"], r["policy"]) for r in cluster["runs"]}
    assert runs == {(g, p) for g, _, _ in PREEMPTORS for p in ("kep5710", "gangweb", "legacy")}
    assert all(r["p50_ms"] >= 0 and r["p99_ms"] >= r["p95_ms"] >= r["p50_ms"] for r in cluster["runs"])
    # Each cell says whether its plan is proven the cheapest: a plan without victims is; only gangweb searches.
    for run in cluster["runs"]:
        if not run["victims"]:
            assert run["optimality"] == "proven"
        elif run["policy"] == "gangweb":
            assert run["optimality"] in {"proven", "heuristic:bound", "heuristic:budget"}
        else:
            assert run["optimality"] == "heuristic:policy"
    assert "[gang bench]" in done.stderr  # progress goes to stderr, never into the JSON


def test_bench_rejects_bad_sizes_with_one_line():
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "gang", "bench", "--nodes", "zero"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
