"""Fan-out benchmark: one planning task against topology domains spread over Celery tasks.

    python manage.py bench fanout [--nodes 5000 20000] [--parts 4] [--worker N] [--json]

For the engine's synthetic clusters (racks of 16 nodes, blocks of 16 racks) and its rack- and
block-constrained preemptors, it times what each route costs on its critical path. One task parses
the snapshot and plans. A fan-out parses it too (to rank and deal the domains and find the anchor
domain), cuts each shard's sub-snapshot, stashes the cuts in Redis (``REDIS_URL``), and waits for its
slowest shard (fetch its cut, parse it, plan its domains) and the merge: "fan-out (ideal)" assumes
one idle worker per shard. With ``--worker N`` it also starts a real Celery worker of N prefork
processes on ``REDIS_URL`` and times the real group of ``scheduler.plan_domains`` tasks end to end
("fan-out (worker)"). It checks that both routes give the same plan (reason aside). Figures: docs/pipeline.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HELP = "planning fanned out over Celery tasks against one planning task; needs REDIS_URL"


def measure(nodes: int, gpus: int, parts: int, real_worker: bool) -> dict:
    from scheduler.engine import DEFAULT_POLICY, parse_snapshot, plan
    from scheduler.engine.synthetic import preemptor_name, synthetic_cluster
    from scheduler.preemption import fanout

    objects = synthetic_cluster(nodes, seed=7)
    podgroup = preemptor_name(gpus)
    started = time.perf_counter()
    single = plan(parse_snapshot(objects), podgroup, DEFAULT_POLICY)
    single_s = time.perf_counter() - started

    began = time.perf_counter()
    shards, cuts = fanout.deal(objects, podgroup, parts)
    dealt = time.perf_counter()
    key = fanout.stash(objects, cuts)
    stashed = time.perf_counter()
    payloads, slowest = [], 0.0
    for shard in shards:
        begin = time.perf_counter()
        payloads.append(fanout.plan_shard(fanout.unstash(key), podgroup, DEFAULT_POLICY, shard))
        slowest = max(slowest, time.perf_counter() - begin)
    merge_begin = time.perf_counter()
    merged = fanout.merge(payloads, time.time()).plan
    merge_s = time.perf_counter() - merge_begin
    row = {
        "nodes": nodes,
        "gpus": gpus,
        "domains": sum(map(len, shards)),
        "shards": len(shards),
        "objects": len(objects),
        "cut_objects_mean": round(sum(len(c["objects"]) for c in cuts.values()) / len(cuts)),
        "single_task_s": round(single_s, 3),
        "deal_and_cut_s": round(dealt - began, 3),
        "stash_s": round(stashed - dealt, 3),
        "slowest_shard_s": round(slowest, 3),
        "fan_out_ideal_s": round((stashed - began) + slowest + merge_s, 3),
        "same_plan": _same(merged, single.to_dict()),
    }
    if real_worker:
        row.update(_through_worker(objects, podgroup, parts, single.to_dict()))
    fanout.drop(key)
    return row


def _same(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "reason"} == {k: v for k, v in b.items() if k != "reason"}


def _through_worker(objects: list, podgroup: str, parts: int, single: dict) -> dict:
    from celery import group

    from scheduler.engine import DEFAULT_POLICY
    from scheduler.preemption import fanout
    from scheduler.preemption.tasks import plan_domains

    began = time.perf_counter()
    shards, cuts = fanout.deal(objects, podgroup, parts)
    key = fanout.stash(objects, cuts)
    payloads = (
        group(plan_domains.s(key, podgroup, DEFAULT_POLICY, shard) for shard in shards)
        .apply_async()
        .get(timeout=600, disable_sync_subtasks=False)
    )
    merged = fanout.merge(payloads, time.time()).plan
    wall = time.perf_counter() - began
    fanout.drop(key)
    return {"fan_out_worker_s": round(wall, 3), "same_plan_worker": _same(merged, single)}


class Worker:
    """A Celery worker of our own for the benchmark (its process group is ended on exit)."""

    def __init__(self, concurrency: int) -> None:
        root = Path(__file__).resolve().parents[2]  # the repository
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"fanout-bench-worker-{os.getpid()}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 (lives as long as the worker; closed in stop())
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "gangweb",
                "worker",
                "--pool=prefork",
                f"--concurrency={concurrency}",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-Q",
                "celery",
            ],
            cwd=root,
            env=os.environ.copy(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if b"ready." in self.log_path.read_bytes():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"the benchmark's Celery worker did not start; see {self.log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        self.log.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument(
        "--worker",
        type=int,
        default=0,
        metavar="N",
        help="also run the shards on a real Celery worker of N processes",
    )
    parser.add_argument("--json", action="store_true")


def handle(args: argparse.Namespace) -> int:
    worker = Worker(args.worker) if args.worker else None
    try:
        if worker:
            worker.wait_ready()
        rows = [measure(nodes, gpus, args.parts, bool(worker)) for nodes in args.nodes for gpus in (64, 256)]
    finally:
        if worker:
            worker.stop()
    if args.json:
        print(
            json.dumps(
                {"benchmark": "fan-out", "parts": args.parts, "worker_processes": args.worker, "rows": rows}
            )
        )
        return 0
    print(
        f"{'nodes':>6} {'gang':>5} {'domains':>8} {'objects':>8} {'per cut':>8} {'one task s':>11} "
        f"{'deal+cut s':>11} {'slowest shard s':>16} {'fan-out (ideal) s':>18} {'fan-out (worker) s':>19}  same plan"
    )
    for r in rows:
        real = f"{r['fan_out_worker_s']:>19.2f}" if "fan_out_worker_s" in r else f"{'-':>19}"
        same = r["same_plan"] and r.get("same_plan_worker", True)
        print(
            f"{r['nodes']:>6} {r['gpus']:>5} {r['domains']:>8} {r['objects']:>8} {r['cut_objects_mean']:>8} "
            f"{r['single_task_s']:>11.2f} {r['deal_and_cut_s']:>11.2f} {r['slowest_shard_s']:>16.2f} "
            f"{r['fan_out_ideal_s']:>18.2f} {real}  {same}"
        )
    print(
        f"(critical path; {args.parts} shards; 'ideal' assumes one idle worker per shard"
        + (f"; the real worker ran {args.worker} processes)" if args.worker else ")")
    )
    return 0
