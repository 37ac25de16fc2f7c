"""Fan-out benchmark: one planning task against topology domains spread over Celery tasks.

    python manage.py bench fanout [--nodes 5000 20000] [--parts 4] [--json]

With watch caches every worker holds the indexed snapshot already (``scheduler.engine.live``), so a
shard's message is its domain names and a resourceVersion, and neither route parses anything. For the
engine's synthetic clusters and their rack- and block-constrained preemptors it times, in this
process, the critical path of each route on one live snapshot: one task plans; a fan-out deals the
ranked domains (``domain_shards``), then waits for its slowest shard (``plan(..., domains=shard)``) and
the merge ("fan-out ideal": one idle worker per shard, Celery's own latency, a few ms per message,
left out). It checks that both routes give the same plan (reason aside). Figures: docs/pipeline.md.
"""

from __future__ import annotations

import argparse
import json
import time

HELP = "planning fanned out over Celery tasks against one planning task (critical path, in process)"


def measure(nodes: int, gpus: int, parts: int) -> dict:
    from scheduler.engine import DEFAULT_POLICY, domain_shards, plan
    from scheduler.engine.live import LiveSnapshot
    from scheduler.engine.synthetic import preemptor_name, synthetic_cluster
    from scheduler.preemption import fanout
    from scheduler.preemption.planning import View

    snapshot = LiveSnapshot(synthetic_cluster(nodes, seed=7)).snapshot()
    podgroup = preemptor_name(gpus)
    plan(snapshot, podgroup, DEFAULT_POLICY)  # warm the snapshot's memo, as a worker's is
    started = time.perf_counter()
    single = plan(snapshot, podgroup, DEFAULT_POLICY)
    single_s = time.perf_counter() - started

    began = time.perf_counter()
    shards = [s for s in domain_shards(snapshot, podgroup, parts, DEFAULT_POLICY) if s]
    dealt = time.perf_counter()
    payloads, slowest = [], 0.0
    for shard in shards:
        begin = time.perf_counter()
        payloads.append(fanout.plan_shard(View(snapshot), podgroup, DEFAULT_POLICY, shard))
        slowest = max(slowest, time.perf_counter() - begin)
    merge_begin = time.perf_counter()
    merged = fanout.merge(payloads, time.time()).plan
    merge_s = time.perf_counter() - merge_begin
    return {
        "nodes": nodes,
        "gpus": gpus,
        "domains": sum(map(len, shards)),
        "shards": len(shards),
        "single_task_s": round(single_s, 3),
        "deal_s": round(dealt - began, 3),
        "slowest_shard_s": round(slowest, 3),
        "fan_out_ideal_s": round((dealt - began) + slowest + merge_s, 3),
        "same_plan": _same(merged, single.to_dict()),
    }


def _same(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "reason"} == {k: v for k, v in b.items() if k != "reason"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--json", action="store_true")


def handle(args: argparse.Namespace) -> int:
    rows = [measure(nodes, gpus, args.parts) for nodes in args.nodes for gpus in (64, 256)]
    if args.json:
        print(json.dumps({"benchmark": "fan-out", "parts": args.parts, "rows": rows}))
        return 0
    print(
        f"{'nodes':>6} {'gang':>5} {'domains':>8} {'one task s':>11} {'deal s':>7} "
        f"{'slowest shard s':>16} {'fan-out (ideal) s':>18}  same plan"
    )
    for r in rows:
        print(
            f"{r['nodes']:>6} {r['gpus']:>5} {r['domains']:>8} {r['single_task_s']:>11.3f} {r['deal_s']:>7.3f} "
            f"{r['slowest_shard_s']:>16.3f} {r['fan_out_ideal_s']:>18.3f}  {r['same_plan']}"
        )
    print(f"(critical path; {args.parts} shards; 'ideal' assumes one idle worker per shard)")
    return 0
