"""The engine benchmark behind ``manage.py bench engine``: plan() timed on synthetic clusters (no Django here)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from scheduler.engine.builders import as_list
from scheduler.engine.dra.builders import as_dra
from scheduler.engine.entry import plan
from scheduler.engine.policies import POLICIES
from scheduler.engine.snapshot import load_snapshot
from testkit.synthetic import PREEMPTORS, preemptor_name, synthetic_cluster

DEFAULT_NODES = (1000, 5000, 20000)
POLICY_ORDER = tuple(POLICIES)  # the registry's order


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run_benchmark(
    node_counts: Sequence[int] = DEFAULT_NODES,
    *,
    repeats: int = 7,
    policies: Sequence[str] = POLICY_ORDER,
    seed: int = 7,
    devices: str = "extended",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    say = progress or (lambda message: None)
    load_before = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_before": load_before},
        "repeats": repeats,
        "seed": seed,
        "devices": devices,
        "clusters": [],
    }
    for nodes in node_counts:
        say(f"{nodes} nodes: generating")
        objects = synthetic_cluster(nodes, seed=seed)
        if devices == "dra":  # the same GPUs as DRA devices: ResourceSlices and claims
            objects = as_dra(objects)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(as_list(objects), handle)
            path = handle.name
        del objects
        try:
            size = os.path.getsize(path)
            loads, load_cpu = [], []
            for _ in range(3 if nodes <= 5000 else 1):
                say(f"{nodes} nodes: loading {size / 1e6:.1f} MB snapshot")
                snapshot = None  # let the previous copy go before timing the next load
                started, started_cpu = time.perf_counter(), time.process_time()
                snapshot = load_snapshot(path)
                loads.append(time.perf_counter() - started)
                load_cpu.append(time.process_time() - started_cpu)
        finally:
            os.unlink(path)
        assert snapshot is not None  # loaded at least once above
        cluster: dict[str, Any] = {
            "nodes": nodes,
            "pods": len(snapshot.pods),
            "podgroups": len(snapshot.groups),
            "victim_units": len(snapshot.units.units),
            "snapshot_mb": round(size / 1e6, 1),
            "load_s": round(statistics.median(loads), 3),
            "load_cpu_s": round(statistics.median(load_cpu), 3),
            "free_gpus": int(snapshot.gpus(snapshot.free).sum()),
            "runs": [],
        }
        for gpus, _, topology in PREEMPTORS:
            for policy in policies:
                if policy not in POLICIES:
                    raise ValueError(f"unknown policy {policy!r}")
                say(f"{nodes} nodes: {policy} for a {gpus}-GPU gang")
                started = time.perf_counter()
                result = plan(snapshot, preemptor_name(gpus), policy)  # cold: per-snapshot caches fill here
                cold_ms = (time.perf_counter() - started) * 1000
                timings, cpu = [], []
                for _ in range(repeats):
                    started, started_cpu = time.perf_counter(), time.process_time()
                    result = plan(snapshot, preemptor_name(gpus), policy)
                    timings.append((time.perf_counter() - started) * 1000)
                    cpu.append((time.process_time() - started_cpu) * 1000)
                cluster["runs"].append(
                    {
                        "preemptor_gpus": gpus,
                        "topology": topology,
                        "policy": policy,
                        "cold_ms": round(cold_ms, 2),
                        "p50_ms": round(statistics.median(timings), 2),
                        "p95_ms": round(_percentile(timings, 0.95), 2),
                        "p99_ms": round(_percentile(timings, 0.99), 2),
                        # CPU time of this process: what the plan costs when other work shares the cores.
                        "cpu_p50_ms": round(statistics.median(cpu), 2),
                        "feasible": result.feasible,
                        "optimality": result.optimality,
                        "victims": len(result.victims),
                        "evicted_pods": len(result.evictions),
                        "evicted_gpus": result.evicted_gpus,
                        "highest_victim_priority": max((v.priority for v in result.victims), default=None),
                        "lost_gpu_hours": round(result.lost_gpu_seconds / 3600, 1),
                        "partly_evicted_gangs": result.stats.get("partly_evicted_gangs"),
                        "idle_gpus": result.stats.get("idle_gpus"),
                    }
                )
        results["clusters"].append(cluster)
        del snapshot
    return results


def format_table(results: dict[str, Any]) -> str:
    lines = [
        f"gang bench: {results['machine']['cpus']} CPU(s), one cold plan then {results['repeats']} timed runs per cell, "
        f"seed {results['seed']}, GPUs as {results.get('devices', 'extended')} "
        f"{'devices (ResourceSlices and claims)' if results.get('devices') == 'dra' else 'resources'}; "
        f"load average {results['machine'].get('load_before', '?')} before the run (other work skews wall times)"
    ]
    header = (
        f"{'nodes':>6} {'gang':>5} {'policy':<8} {'cold ms':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'cpu p50':>8} {'victims':>7} {'pods':>5} "
        f"{'GPUs':>5} {'top prio':>8} {'GPU-h lost':>10} {'optimality':<18} {'partly evicted gangs':>21}"
    )
    for cluster in results["clusters"]:
        lines.append("")
        lines.append(
            f"{cluster['nodes']} nodes, {cluster['pods']} pods, {cluster['victim_units']} victim units, "
            f"{cluster['free_gpus']} free GPUs; snapshot {cluster['snapshot_mb']} MB loaded in "
            f"{cluster['load_s']:.3f} s ({cluster['load_cpu_s']:.3f} s CPU)"
        )
        lines.append(header)
        for run in cluster["runs"]:
            partly = (
                ""
                if run["partly_evicted_gangs"] is None
                else (f"{run['partly_evicted_gangs']} ({run['idle_gpus']} GPUs idle)")
            )
            top = "-" if run["highest_victim_priority"] is None else str(run["highest_victim_priority"])
            lines.append(
                f"{cluster['nodes']:>6} {run['preemptor_gpus']:>5} {run['policy']:<8} {run['cold_ms']:>8.1f} "
                f"{run['p50_ms']:>8.1f} "
                f"{run['p95_ms']:>8.1f} {run['p99_ms']:>8.1f} {run['cpu_p50_ms']:>8.1f} {run['victims']:>7} "
                f"{run['evicted_pods']:>5} {run['evicted_gpus']:>5} "
                f"{top:>8} {run['lost_gpu_hours']:>10} {run['optimality'] or '-':<18} {partly:>21}"
            )
    return "\n".join(lines)


def stderr_progress(message: str) -> None:
    print(f"[gang bench] {message}", file=sys.stderr, flush=True)
