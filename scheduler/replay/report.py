"""One run of every policy on the same workload, and its report: a JSON-ready dict and a text table.

Every figure of the report depends only on the trace, the options and the seed, except the timing
fields (``TIMING_KEYS``: plan latency, snapshot build time, elapsed seconds), which are wall time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scheduler.idle import ALLOCATED_IDLE, BROKEN_GANGS, FREE_WHILE_WAITING, HELD_FOR_UNPLACED
from scheduler.replay.sim import POLICIES, Replay, Tally
from scheduler.replay.trace import read_trace
from scheduler.replay.workload import TIERS, build_workload

TIER_NAMES = tuple(name for name, _, _ in TIERS)
TIMING_KEYS = ("planLatencyMsP50", "planLatencyMsP99", "snapshotBuildMsP50", "elapsedSeconds")


@dataclass(frozen=True)
class ReplayConfig:
    trace: Path
    hours: float = 24.0
    nodes: int | None = None
    seed: int = 1
    policies: tuple[str, ...] = POLICIES
    checkpoint_minutes: float = 30.0
    notice_seconds: float = 0.0
    lost_work_budget_gpu_hours: float | None = None
    background_load: float = 0.45
    gang_load: float = 0.55


@dataclass
class ReplayResult:
    report: dict
    tallies: dict[str, Tally] = field(default_factory=dict)


def run_replay(
    config: ReplayConfig, progress: Callable[[str, int, float], None] | None = None
) -> ReplayResult:
    """Read the trace, draw the workload, replay it under each policy. Raises TraceError for a bad trace."""
    for policy in config.policies:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}: choose from {', '.join(POLICIES)}")
    started = time.perf_counter()
    trace = read_trace(config.trace)
    workload = build_workload(
        trace,
        hours=config.hours,
        seed=config.seed,
        nodes=config.nodes,
        background_load=config.background_load,
        gang_load=config.gang_load,
    )
    horizon = config.hours * 3600
    tallies: dict[str, Tally] = {}
    policies: dict[str, dict] = {}
    for index, policy in enumerate(config.policies):
        tick = (lambda f, p=policy, i=index: progress(p, i, f)) if progress else None
        begun = time.perf_counter()
        replay = Replay(
            workload,
            policy,
            horizon=horizon,
            checkpoint_seconds=config.checkpoint_minutes * 60,
            notice_seconds=config.notice_seconds,
            lost_work_budget_gpu_hours=config.lost_work_budget_gpu_hours,
            progress=tick,
        )
        tallies[policy] = replay.run()
        policies[policy] = policy_report(tallies[policy])
        policies[policy]["elapsedSeconds"] = round(time.perf_counter() - begun, 1)
    jobs = workload.jobs
    report = {
        "trace": str(Path(config.trace)),
        "hours": config.hours,
        "nodes": len(workload.nodes),
        "gpus": workload.gpus,
        "seed": config.seed,
        "checkpointMinutes": config.checkpoint_minutes,
        "noticeSeconds": config.notice_seconds,
        "lostWorkBudgetGpuHours": config.lost_work_budget_gpu_hours,
        "backgroundLoad": config.background_load,
        "gangLoad": config.gang_load,
        "workload": {
            "gangsSubmitted": sum(1 for j in jobs if j.kind == "gang" and not j.initial),
            "gangsAtStart": sum(1 for j in jobs if j.kind == "gang" and j.initial),
            "backgroundPodsSubmitted": sum(1 for j in jobs if j.kind == "background" and not j.initial),
            "backgroundPodsAtStart": sum(1 for j in jobs if j.kind == "background" and j.initial),
        },
        "policies": policies,
        "elapsedSeconds": round(time.perf_counter() - started, 1),
        "cpus": os.cpu_count(),
    }
    return ReplayResult(report, tallies)


def notice_words(report: dict) -> str:
    """The header's words for the notice and the lost-work budget, when either is on."""
    words = ""
    if report.get("noticeSeconds"):
        words += f", notice {report['noticeSeconds']:g} s"
    if report.get("lostWorkBudgetGpuHours") is not None:
        words += f", lost-work budget {report['lostWorkBudgetGpuHours']:g} GPU-h/h per namespace"
    return words


def _pct(values: list[float], q: float, digits: int = 1) -> float | None:
    return round(float(np.percentile(values, q)), digits) if values else None


def policy_report(t: Tally) -> dict:
    capacity = t.gpus * t.horizon
    lost = t.lost_gpu_seconds
    return {
        "brokenGangs": sum(t.broken.values()),
        "brokenGangsByMode": dict(t.broken),
        "idleGpuHoursInBrokenGangs": round(t.broken_gpu_seconds / 3600, 1),
        # The live figure's causes (scheduler/idle.py, GET /api/v1/idle/): the trace has no GPU activity
        # (allocatedIdle: null) and the replay binds a gang whole (nothing held for an unplaced one).
        "idleGpuHours": {
            FREE_WHILE_WAITING: round(t.free_while_waiting_gpu_seconds / 3600, 1),
            BROKEN_GANGS: round(t.broken_gpu_seconds / 3600, 1),
            ALLOCATED_IDLE: None,
            HELD_FOR_UNPLACED: 0.0,
        },
        "gpuHoursLost": round((lost["gang"] + lost["background"]) / 3600, 1),
        "gpuHoursLostGangs": round(lost["gang"] / 3600, 1),
        "gpuHoursLostBackground": round(lost["background"] / 3600, 1),
        "evictions": t.evictions,
        "gangsEvictedWhole": t.evicted_gangs_whole,
        "preemptions": t.preemptions,
        "brokenGangRestarts": t.restarts,
        "evictionsAtOrAbovePreemptorPriority": t.evicted_not_lower,
        "utilisation": round(t.busy_gpu_seconds / capacity, 4) if capacity else 0.0,
        # Utilisation less the work later thrown away: the share of GPU time that made lasting progress.
        "goodput": round((t.busy_gpu_seconds - lost["gang"] - lost["background"]) / capacity, 4)
        if capacity
        else 0.0,
        "allocation": round(t.held_gpu_seconds / capacity, 4) if capacity else 0.0,
        "waitSecondsP50ByTier": {tier: _pct(t.waits.get(tier, []), 50) for tier in TIER_NAMES},
        "waitSecondsP95ByTier": {tier: _pct(t.waits.get(tier, []), 95) for tier in TIER_NAMES},
        "gangsNeverStartedByTier": {tier: t.never_started.get(tier, 0) for tier in TIER_NAMES},
        "gangsSubmitted": t.submitted,
        "gangsFinished": t.finished["gang"],
        "backgroundPodsFinished": t.finished["background"],
        "plans": t.plans,
        "planLatencyMsP50": _pct(t.plan_ms, 50, 2),
        "planLatencyMsP99": _pct(t.plan_ms, 99, 2),
        "snapshotBuildMsP50": _pct(t.snapshot_ms, 50, 1),
    }


def without_timing(report: dict) -> dict:
    """The report minus its wall-time fields: what a seed must reproduce exactly."""
    out = {k: v for k, v in report.items() if k not in TIMING_KEYS}
    out["policies"] = {
        name: {k: v for k, v in figures.items() if k not in TIMING_KEYS}
        for name, figures in report.get("policies", {}).items()
    }
    return out


def _fmt(value, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def format_table(report: dict) -> str:
    head = (
        f"gang replay: {report['nodes']} nodes, {report['gpus']} GPUs, {report['hours']:g} h, seed {report['seed']}, "
        f"checkpoint every {report['checkpointMinutes']:g} min"
        f"{notice_words(report)}; {report['workload']['gangsSubmitted']} gangs submitted "
        f"({report['workload']['gangsAtStart']} running at the start), "
        f"{report['workload']['backgroundPodsSubmitted']:,} trace pods; {report['elapsedSeconds']:g} s on {report['cpus']} CPU(s)"
    )
    waits = " ".join(f"{'wait ' + t[:4] + ' p50/p95 s':>20}" for t in TIER_NAMES)
    columns = f"{'policy':8} {'broken':>6} {'idle GPU-h':>10} {'lost GPU-h':>10} {'evictions':>9} {'util':>6} {'goodput':>7} {waits} {'plan p50/p99 ms':>16}"
    lines = [head, "", columns]
    for name, p in report["policies"].items():
        tiers = " ".join(
            f"{_fmt(p['waitSecondsP50ByTier'][t]) + ' / ' + _fmt(p['waitSecondsP95ByTier'][t]):>20}"
            for t in TIER_NAMES
        )
        latency = f"{_fmt(p['planLatencyMsP50'], 1)} / {_fmt(p['planLatencyMsP99'], 1)}"
        lines.append(
            f"{name:8} {p['brokenGangs']:>6} {_fmt(p['idleGpuHoursInBrokenGangs'], 1):>10} {_fmt(p['gpuHoursLost'], 1):>10} "
            f"{p['evictions']:>9} {p['utilisation'] * 100:>5.1f}% {p['goodput'] * 100:>6.1f}% {tiers} {latency:>16}"
        )
    return "\n".join(lines)
