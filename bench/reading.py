"""One cluster reading in process: ``python manage.py bench reading``.

    python manage.py bench reading [--nodes 5000,20000] [--runs 5] [--json]

A synthetic cluster (``testkit.synthetic``: ``--nodes`` nodes of 8 GPUs, 90 % held by gangs, about a
quarter of them lone GPU pods) is read as the dashboard's ticker reads it every tick
(``gangweb.clusterview.reading.take``: the walk over its objects and the GPU map's picture, unpaced), then
the API's rows are built from that reading (``gangweb.clusterview.rows.build_view``). Medians of
``--runs``, after one run left out (imports, first allocations), wall and CPU (``time.process_time``: on a
shared machine the figure that moves less with the load); no cluster, no database.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Any

HELP = "the ticker's reading (walk + GPU map picture) and the API's rows of it, in process, at --nodes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", default="5000,20000", help="synthetic nodes of 8 GPUs, comma separated")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per size (default 5)")
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")


class _Objects:
    """A cluster that hands its objects as they are (a watch cache does not copy them either)."""

    name = "bench"

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects

    def snapshot_objects(self) -> list[dict[str, Any]]:
        return self.objects


def measure(nodes: int, runs: int) -> dict[str, Any]:
    from gangweb.clusterview import reading, rows
    from testkit.synthetic import synthetic_cluster

    cluster = _Objects(synthetic_cluster(nodes))
    gc.collect()
    gc.freeze()  # a watch cache's objects are frozen out of the collector's passes (scheduler/kube/adapter.py)
    picture_s: list[float] = []
    rows_s: list[float] = []
    picture_cpu: list[float] = []
    rows_cpu: list[float] = []
    for run in range(runs + 1):
        started, started_cpu = time.perf_counter(), time.process_time()
        taken = reading.take(cluster, max_age=0)  # type: ignore[arg-type]
        built, built_cpu = time.perf_counter(), time.process_time()
        rows.build_view(taken)
        done, done_cpu = time.perf_counter(), time.process_time()
        if run:
            picture_s.append(built - started)
            rows_s.append(done - built)
            picture_cpu.append(built_cpu - started_cpu)
            rows_cpu.append(done_cpu - built_cpu)
    reading.forget()
    gc.unfreeze()
    return {
        "nodes": nodes,
        "objects": len(cluster.objects),
        "gangs": len(taken.picture["gangs"]),
        "readingMs": round(statistics.median(picture_s) * 1000),
        "rowsMs": round(statistics.median(rows_s) * 1000),
        "readingCpuMs": round(statistics.median(picture_cpu) * 1000),
        "rowsCpuMs": round(statistics.median(rows_cpu) * 1000),
    }


def handle(options: argparse.Namespace) -> int:
    sizes = [int(n) for n in str(options.nodes).split(",") if n.strip()]
    found = []
    for nodes in sizes:
        print(f"reading {nodes} nodes, {options.runs} runs ...", file=sys.stderr)
        found.append(measure(nodes, max(1, options.runs)))
    if options.json:
        print(json.dumps({"runs": options.runs, "sizes": found}))
        return 0
    print(f"{'nodes':>7} {'objects':>8} {'gangs':>7} {'reading ms':>11} {'cpu':>6} {'rows ms':>8} {'cpu':>6}")
    for row in found:
        print(
            f"{row['nodes']:>7} {row['objects']:>8} {row['gangs']:>7} {row['readingMs']:>11}"
            f" {row['readingCpuMs']:>6} {row['rowsMs']:>8} {row['rowsCpuMs']:>6}"
        )
    return 0
