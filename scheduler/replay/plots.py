"""The replay's figures as PNG files (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from scheduler.replay.report import TIER_NAMES, ReplayResult

FILES = ("replay-utilisation.png", "replay-waits.png", "replay-lost.png")


def write_plots(result: ReplayResult, directory: Path) -> list[Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / name for name in FILES]
    _utilisation(result, paths[0])
    _waits(result, paths[1])
    _lost(result, paths[2])
    return paths


def _title(result: ReplayResult, what: str) -> str:
    r = result.report
    return f"{what}\n{r['nodes']} nodes, {r['gpus']} GPUs, {r['hours']:g} h, seed {r['seed']}"


def _utilisation(result: ReplayResult, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, tally in result.tallies.items():
        hours = [t / 3600 for t, _, _ in tally.samples]
        line = ax.plot(hours, [busy * 100 for _, busy, _ in tally.samples], label=f"{name}: busy")[0]
        if any(broken for _, _, broken in tally.samples):
            ax.plot(
                hours,
                [b * 100 for *_, b in tally.samples],
                "--",
                color=line.get_color(),
                label=f"{name}: idle in broken gangs",
            )
    ax.set_xlabel("hours")
    ax.set_ylabel("% of GPUs")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(_title(result, "GPU utilisation over time (GPUs doing work)"), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _waits(result: ReplayResult, path: Path) -> None:
    names = list(result.tallies)
    fig, axes = plt.subplots(1, len(TIER_NAMES), figsize=(11, 4), sharey=True)
    for ax, tier in zip(axes, TIER_NAMES):
        data = [[max(w, 1.0) / 60 for w in result.tallies[n].waits.get(tier, [])] or [0.0167] for n in names]
        ax.boxplot(data, tick_labels=names, showfliers=True)
        ax.set_yscale("log")
        ax.set_title(f"tier {tier}", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("minutes from submit to start (log)")
    fig.suptitle(_title(result, "Gang wait time by priority tier"), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _lost(result: ReplayResult, path: Path) -> None:
    names = list(result.tallies)
    policies = result.report["policies"]
    gangs = [policies[n]["gpuHoursLostGangs"] for n in names]
    background = [policies[n]["gpuHoursLostBackground"] for n in names]
    idle = [policies[n]["idleGpuHoursInBrokenGangs"] for n in names]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.bar(names, gangs, label="work lost: gangs")
    ax.bar(names, background, bottom=gangs, label="work lost: trace pods")
    ax.bar(names, idle, bottom=[g + b for g, b in zip(gangs, background)], label="held idle in broken gangs")
    ax.set_ylabel("GPU-hours")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    ax.set_title(_title(result, "GPU-hours lost to preemption"), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
