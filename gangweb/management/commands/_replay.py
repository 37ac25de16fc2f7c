"""``manage.py gang replay``: the thin adapter over ``scheduler/replay/`` (options, progress bar, output).

Contract (docs/design.md): ``gang replay [--trace DIR] [--hours H] [--nodes N] [--seed S]
[--policies a,b,...] [--checkpoint-minutes M] [--notice-seconds S] [--lost-work-budget GPU_HOURS]
[--plots DIR] [--json]``. Bad input (options, a missing
or malformed trace file) is one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import yaml

from scheduler.argtypes import add_output
from scheduler.replay.report import ReplayConfig, format_table, run_replay
from scheduler.replay.sim import POLICIES
from scheduler.replay.trace import TraceError, default_trace_dir

REPORT_FILE = "replay.json"


def replay_arguments(parser) -> None:
    parser.add_argument(
        "--trace",
        help="folder of cluster-trace-gpu-v2023 (default: the copy shipped with gangweb, scheduler/replay/traces/openb)",
    )
    parser.add_argument("--hours", type=float, default=24.0, help="simulated hours (default 24)")
    parser.add_argument(
        "--nodes", type=int, default=None, help="keep a seeded sample of N trace nodes (default: all)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the workload generator (default 1)")
    parser.add_argument(
        "--policies", default=",".join(POLICIES), help=f"comma-separated, from {','.join(POLICIES)}"
    )
    parser.add_argument(
        "--checkpoint-minutes", type=float, default=30.0, help="checkpoint interval (default 30; 0: none)"
    )
    parser.add_argument(
        "--notice-seconds",
        type=float,
        default=0.0,
        help="notice before an eviction; gangs checkpoint on it (default 0: none)",
    )
    parser.add_argument(
        "--lost-work-budget",
        type=float,
        default=None,
        metavar="GPU_HOURS",
        help="GPU-hours each namespace may lose to preemption per rolling hour (default: no cap)",
    )
    parser.add_argument(
        "--background-load", type=float, default=0.45, help="trace pods' share of the GPUs (default 0.45)"
    )
    parser.add_argument(
        "--gang-load", type=float, default=0.55, help="generated gangs' share of the GPUs (default 0.55)"
    )
    parser.add_argument("--plots", help="write the PNG plots and replay.json to this folder")
    # -o json|yaml: one object, no progress bar (--json: -o json); table and wide are the same table.
    add_output(parser, default="table")


def _config(options, fail) -> ReplayConfig:
    policies = tuple(p.strip() for p in options["policies"].split(",") if p.strip())
    unknown = [p for p in policies if p not in POLICIES]
    if not policies or unknown or len(set(policies)) != len(policies):
        fail(f"--policies: expected distinct names from {', '.join(POLICIES)}, got {options['policies']!r}")
    if not 0 < options["hours"] <= 24 * 60:
        fail(f"--hours: expected more than 0 and at most 1440, got {options['hours']:g}")
    if options["nodes"] is not None and options["nodes"] < 1:
        fail(f"--nodes: expected at least 1, got {options['nodes']}")
    if options["checkpoint_minutes"] < 0:
        fail(f"--checkpoint-minutes: expected 0 or more, got {options['checkpoint_minutes']:g}")
    if not 0 <= options["notice_seconds"] <= 3600:
        fail(f"--notice-seconds: expected 0 to 3600, got {options['notice_seconds']:g}")
    if options["lost_work_budget"] is not None and not options["lost_work_budget"] >= 0:
        fail(f"--lost-work-budget: expected 0 or more, got {options['lost_work_budget']:g}")
    for name in ("background_load", "gang_load"):
        if not 0 <= options[name] <= 2:
            fail(f"--{name.replace('_', '-')}: expected 0 to 2, got {options[name]:g}")
    trace = Path(options["trace"]) if options["trace"] else default_trace_dir()
    return ReplayConfig(
        trace=trace,
        hours=options["hours"],
        nodes=options["nodes"],
        seed=options["seed"],
        policies=policies,
        checkpoint_minutes=options["checkpoint_minutes"],
        notice_seconds=options["notice_seconds"],
        lost_work_budget_gpu_hours=options["lost_work_budget"],
        background_load=options["background_load"],
        gang_load=options["gang_load"],
    )


class ProgressBar:
    """``[#####-----]  43% legacy (3/4)`` on stderr, redrawn at most every quarter second on a terminal;
    elsewhere (a log, a pipe) one line per tenth of the run."""

    def __init__(self, policies: tuple[str, ...], stream=sys.stderr, width: int = 30) -> None:
        self.policies, self.stream, self.width, self.last = policies, stream, width, 0.0
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.step = -1

    def __call__(self, policy: str, index: int, fraction: float) -> None:
        done = (index + min(fraction, 1.0)) / len(self.policies)
        if self.tty:
            now = time.monotonic()
            if now - self.last < 0.25 and fraction < 1:
                return
            self.last = now
        elif int(done * 10) == self.step:
            return
        self.step = int(done * 10)
        filled = int(done * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {done * 100:3.0f}% {policy} ({index + 1}/{len(self.policies)})"
        self.stream.write(f"\r{line}   " if self.tty else f"{line}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run_replay_command(options, stdout, fail) -> None:
    config = _config(options, fail)
    bar = ProgressBar(config.policies) if options["output"] in ("table", "wide") else None
    try:
        result = run_replay(config, bar)
    except TraceError as exc:
        if bar:
            bar.close()
        fail(str(exc))
    if bar:
        bar.close()
    if options["plots"]:
        from scheduler.replay.plots import write_plots  # matplotlib loads only when plots are asked for

        folder = Path(options["plots"])
        try:
            write_plots(result, folder)
            (folder / REPORT_FILE).write_text(json.dumps(result.report, indent=2) + "\n")
        except OSError as exc:
            fail(f"cannot write plots to {folder}: {exc.strerror or exc}")
    if options["output"] == "json":
        stdout.write(json.dumps(result.report))
    elif options["output"] == "yaml":
        stdout.write(yaml.safe_dump(result.report, sort_keys=False).rstrip("\n"))
    else:
        stdout.write(format_table(result.report))
        if options["plots"]:
            stdout.write(f"\nplots and {REPORT_FILE} written to {options['plots']}")
