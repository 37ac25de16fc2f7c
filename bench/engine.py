"""Engine benchmark: plan latency and victims on synthetic GPU clusters, or plan quality against the optimum.

    python manage.py bench engine [--nodes 1000 5000 20000] [--repeats 7] [--policy ...] [--seed 7] [--devices extended|dra]
        [--quality N] [--json]

Generates clusters of 8-GPU nodes (``testkit/synthetic.py``), loads each as a snapshot file and plans
the synthetic preemptors with every policy: one cold plan, then ``--repeats`` timed ones (p50/p95/p99), and each
plan's ``optimality``. With ``--quality N`` it compares the plans with the brute-force optimum on N small random
clusters instead, and counts the gangweb plans proven the cheapest and how many of them the brute force confirms.
Needs no database. The measuring itself is ``bench/engine_timing.py`` and ``testkit/quality.py``;
figures and what they mean: docs/engine.md. (Formerly ``manage.py gang bench``, still an alias.)
"""

from __future__ import annotations

import argparse
import json

from bench.engine_timing import DEFAULT_NODES, POLICY_ORDER
from scheduler.engine import POLICIES

from . import at_least_one

HELP = "the engine: plan latency and victims on synthetic GPU clusters (formerly `gang bench`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes",
        type=at_least_one,
        nargs="+",
        default=list(DEFAULT_NODES),
        help="cluster sizes (nodes x 8 GPUs), default 1000 5000 20000",
    )
    parser.add_argument("--repeats", type=at_least_one, default=7, help="plans per cell (p50/p95 over them)")
    parser.add_argument(
        "--policy", dest="policies", nargs="+", default=list(POLICY_ORDER), choices=sorted(POLICIES)
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--devices",
        choices=("extended", "dra"),
        default="extended",
        help="GPUs as the nvidia.com/gpu extended resource (default) or as DRA devices (ResourceSlices, claims)",
    )
    parser.add_argument(
        "--quality",
        type=at_least_one,
        metavar="N",
        help="instead of timing: compare plans with the brute-force optimum on N small clusters",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def handle(options: argparse.Namespace) -> int:
    from bench.engine_timing import format_table, run_benchmark, stderr_progress
    from testkit.quality import format_study, study

    if options.quality:
        found = study(options.quality, seed=options.seed, progress=stderr_progress)
        print(json.dumps(found) if options.json else format_study(found))
        return 0
    results = run_benchmark(
        options.nodes,
        repeats=options.repeats,
        policies=options.policies,
        seed=options.seed,
        devices=options.devices,
        progress=stderr_progress,
    )
    print(json.dumps(results) if options.json else format_table(results))
    return 0
