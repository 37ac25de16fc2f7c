"""Fan-out benchmark: one planning task against topology domains spread over Celery tasks.

    python -m scheduler.fanout_bench [--nodes 5000 20000] [--parts 4] [--json]

For the engine's synthetic clusters (racks of 16 nodes, blocks of 16 racks) and its rack- and
block-constrained preemptors, it times what each route costs on its critical path: one task parses
the snapshot and plans; a fan-out parses it to deal the shards, stashes it in Redis (``REDIS_URL``),
and then waits for its slowest shard (unstash, parse, plan a part of the domains), with as many
workers as shards. It also checks that both routes give the same plan.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def measure(nodes: int, gpus: int, parts: int) -> dict:
    from scheduler import fanout
    from scheduler.engine import domain_shards, parse_snapshot, plan
    from scheduler.engine.synthetic import preemptor_name, synthetic_cluster

    objects = synthetic_cluster(nodes, seed=7)
    podgroup = preemptor_name(gpus)
    started = time.perf_counter()
    snapshot = parse_snapshot(objects)
    parsed = time.perf_counter()
    single = plan(snapshot, podgroup, "gangweb")
    planned = time.perf_counter()
    shards = [s for s in domain_shards(snapshot, podgroup, parts) if s]
    dealt = time.perf_counter()
    key = fanout.stash(objects)
    stashed = time.perf_counter()
    payloads, slowest = [], 0.0
    for shard in shards:
        begin = time.perf_counter()
        payloads.append(fanout.plan_shard(fanout.unstash(key), podgroup, "gangweb", shard))
        slowest = max(slowest, time.perf_counter() - begin)
    fanout.drop(key)
    merged = fanout.merge(payloads, time.time()).plan
    same = {k: v for k, v in merged.items() if k != "reason"} == \
        {k: v for k, v in single.to_dict().items() if k != "reason"}
    return {
        "nodes": nodes, "gpus": gpus, "domains": sum(map(len, shards)), "shards": len(shards),
        "parse_s": round(parsed - started, 3), "plan_s": round(planned - parsed, 4),
        "single_task_s": round(planned - started, 3),
        "fan_out_s": round((parsed - started) + (dealt - planned) + (stashed - dealt) + slowest, 3),
        "slowest_shard_s": round(slowest, 3), "same_plan": same,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler.fanout_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not os.environ.get("REDIS_URL"):
        print("error: set REDIS_URL (the fan-out stashes the snapshot in Redis)", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gangweb.settings")
    os.environ.setdefault("SECRET_KEY", "benchmark")
    import django

    django.setup()
    rows = [measure(nodes, gpus, args.parts) for nodes in args.nodes for gpus in (64, 256)]
    if args.json:
        print(json.dumps({"benchmark": "fan-out", "parts": args.parts, "rows": rows}))
        return 0
    print(f"{'nodes':>6} {'gang':>5} {'domains':>8} {'parse s':>8} {'plan ms':>8} {'one task s':>11} "
          f"{'fan-out s':>10} {'slowest shard s':>16}  same plan")
    for r in rows:
        print(f"{r['nodes']:>6} {r['gpus']:>5} {r['domains']:>8} {r['parse_s']:>8.2f} {r['plan_s'] * 1000:>8.0f} "
              f"{r['single_task_s']:>11.2f} {r['fan_out_s']:>10.2f} {r['slowest_shard_s']:>16.2f}  {r['same_plan']}")
    print(f"(critical path; the fan-out assumes {args.parts} idle workers, one per shard)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
