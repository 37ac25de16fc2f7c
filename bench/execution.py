"""Execution benchmark: how long a plan of N victim pods takes to carry out against an API server.

    python manage.py bench execution [--victims 8 64 256] [--repeat 3] [--delay-ms 0] [--json]

Each run starts the Kubernetes API test server in its own process, fills nodes of 8 GPUs with
one-GPU single-pod victims, plans a gang that needs all of those GPUs, and executes the plan through
the official client with the ledger in the database ``DATABASE_URL`` names (PostgreSQL; its rows are
removed afterwards). Printed per size: plan time, re-check + dry runs, real evictions, total, and
evictions per second. ``--delay-ms`` makes the test server wait that long in every eviction call,
to see what parallel calls buy against a slow API server. Figures: docs/pipeline.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

HELP = (
    "whole executions (ledger, re-check, dry runs, evictions) against the API test server; needs DATABASE_URL"
)
BENCH_NAMESPACE = "gangweb-bench"


def cluster_objects(victims: int) -> list[dict]:
    def meta(name: str, namespace: str | None = None) -> dict:
        out = {
            "name": name,
            "uid": f"uid-{namespace or ''}-{name}",
            "creationTimestamp": "2026-11-30T08:00:00Z",
        }
        if namespace:
            out["namespace"] = namespace
        return out

    nodes = (victims + 7) // 8
    objects: list[dict] = []
    for n in range(nodes):
        alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": meta(f"bench-node-{n}"),
                "spec": {},
                "status": {
                    "allocatable": alloc,
                    "capacity": alloc,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    gpu_requests = {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}
    for v in range(victims):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta(f"victim-{v}", "bench-batch"),
                "spec": {
                    "nodeName": f"bench-node-{v // 8}",
                    "priority": 10,
                    "containers": [{"name": "main", "image": "pause", "resources": gpu_requests}],
                },
                "status": {"phase": "Running", "startTime": "2026-11-30T08:00:00Z"},
            }
        )
    gang = nodes
    objects.append(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": meta("train", BENCH_NAMESPACE),
            "spec": {"schedulingPolicy": {"gang": {"minCount": gang}}, "priority": 1000},
        }
    )
    eight = {"requests": {"cpu": "1", "nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}
    for g in range(gang):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta(f"train-{g}", BENCH_NAMESPACE),
                "spec": {
                    "priority": 1000,
                    "schedulingGroup": {"podGroupName": "train"},
                    "containers": [{"name": "main", "image": "pause", "resources": eight}],
                },
                "status": {"phase": "Pending"},
            }
        )
    return objects


def run_once(victims: int, delay_ms: int) -> dict:
    import re

    from kubetestserver import TestServerProcess
    from scheduler.kube import KubeCluster
    from scheduler.preemption import ledger, planning
    from scheduler.preemption.execution import execute
    from scheduler.preemption.models import Eviction, PreemptionRequest

    with tempfile.TemporaryDirectory() as tmp, TestServerProcess(Path(tmp) / "kubeconfig") as server:
        server.control.load(cluster_objects(victims))
        if delay_ms:
            server.control.add_fault(
                re.escape("/eviction") + "$", code=0, method="POST", times=None, delay=delay_ms / 1000
            )
        cluster = KubeCluster.from_kubeconfig(server.kubeconfig)
        request, _ = ledger.open_request(BENCH_NAMESPACE, "train", mode="enforce", trigger="benchmark")
        try:
            ledger.begin_planning(request.pk)
            started = time.perf_counter()
            result = planning.compute(planning.fresh_objects(cluster), request.podgroup, "gangweb")
            plan_seconds = time.perf_counter() - started
            plan = ledger.record_plan(request.pk, result.plan, cost=result.cost, pods=result.pods)
            if len(plan.evictions) != victims:
                raise SystemExit(
                    f"benchmark cluster is wrong: the plan evicts {len(plan.evictions)} of {victims}"
                )
            started = time.perf_counter()
            outcome = execute(request.pk, cluster)
            total = time.perf_counter() - started
            rows = list(Eviction.objects.filter(plan=plan))
            request.refresh_from_db()
            dry_done = max(r.dry_run_at for r in rows)
            first_real = min(r.requested_at for r in rows)
            last_real = max(r.finished_at for r in rows)
            return {
                "victims": victims,
                "outcome": outcome.state,
                "plan_s": plan_seconds,
                "check_and_dry_run_s": (dry_done - request.execution_started_at).total_seconds(),
                "evictions_s": (last_real - first_real).total_seconds(),
                "execute_s": total,
                "evictions_per_s": victims / total if total else 0.0,
            }
        finally:
            PreemptionRequest.objects.filter(pk=request.pk).delete()
            cluster.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--victims", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--json", action="store_true")


def handle(args: argparse.Namespace) -> int:
    rows = []
    for victims in args.victims:
        runs = [run_once(victims, args.delay_ms) for _ in range(args.repeat)]
        row = {
            "victims": victims,
            "repeat": args.repeat,
            "delay_ms": args.delay_ms,
            "outcomes": sorted({r["outcome"] for r in runs}),
        }
        for key in ("plan_s", "check_and_dry_run_s", "evictions_s", "execute_s", "evictions_per_s"):
            row[key] = round(statistics.median(r[key] for r in runs), 4)
        rows.append(row)
    if args.json:
        print(json.dumps({"benchmark": "execution", "rows": rows}))
        return 0
    print(
        f"{'victims':>8} {'plan ms':>9} {'check+dry ms':>13} {'evict ms':>9} {'execute ms':>11} {'evictions/s':>12}  outcome"
    )
    for row in rows:
        print(
            f"{row['victims']:>8} {row['plan_s'] * 1000:>9.1f} {row['check_and_dry_run_s'] * 1000:>13.1f} "
            f"{row['evictions_s'] * 1000:>9.1f} {row['execute_s'] * 1000:>11.1f} {row['evictions_per_s']:>12.1f}  "
            f"{','.join(row['outcomes'])}"
        )
    print(f"(median of {args.repeat}; API test server delay per eviction call: {args.delay_ms} ms)")
    return 0
