"""Kube benchmark: how fast the adapter reads and writes through the official client against the test server.

    python manage.py bench kube [--nodes 500] [--pods 5000] [--evictions 200] [--json]

Loads ``--nodes`` 8-GPU nodes and ``--pods`` running pods into an in-process Kubernetes API test server
(``kubetestserver``), then times the adapter (``scheduler.kube.KubeCluster``): a fresh snapshot, the informers'
sync, a cached snapshot copy, the watch lag of 50 changes, and ``--evictions`` dry-run then real evictions. Prints
a table (or, with ``--json``, one JSON object). The numbers include the test server's own cost (one Python
process, JSON over loopback HTTP), so they bound the adapter's cost from above. Figures: docs/kube.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from . import at_least_one

HELP = "the Kubernetes adapter against the API test server: snapshots, informer sync, watch lag, evictions/s"


def _node(i: int) -> dict[str, Any]:
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"topology.kubernetes.io/zone": f"rack-{i // 16}"}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _pod(i: int, nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i}", "namespace": f"team-{i % 10}", "labels": {"app": f"job-{i // 8}"}},
        "spec": {
            "nodeName": f"node-{i % nodes}",
            "schedulingGroup": {"podGroupName": f"job-{i // 8}"},
            "containers": [
                {"name": "main", "image": "train:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def run(nodes: int, pods: int, evictions: int) -> dict[str, Any]:
    from kubetestserver import KubeTestServer  # imported here: listing the benchmarks stays quick
    from scheduler.kube import KubeCluster
    from scheduler.kube.resources import PODS

    figures: dict[str, Any] = {"nodes": nodes, "pods": pods}
    with KubeTestServer(bookmark_interval=1.0) as server, tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        server.load([_node(i) for i in range(nodes)] + [_pod(i, nodes) for i in range(pods)])
        figures["load_s"] = time.perf_counter() - started
        cluster = KubeCluster.from_kubeconfig(
            server.write_kubeconfig(Path(tmp) / "kubeconfig"), timeout=(5.0, 120.0)
        )
        started = time.perf_counter()
        fresh = cluster.fresh_snapshot()
        figures["fresh_snapshot_s"] = time.perf_counter() - started
        assert len(fresh) == nodes + pods
        started = time.perf_counter()
        cluster.start(timeout=120)
        figures["informer_sync_s"] = time.perf_counter() - started
        started = time.perf_counter()
        cached = cluster.snapshot_objects()
        figures["cached_snapshot_s"] = time.perf_counter() - started
        assert len(cached) == nodes + pods

        lags = []
        for i in range(50):
            server.store.patch(
                PODS,
                "team-0",
                "pod-0",
                "application/merge-patch+json",
                {"metadata": {"labels": {"tick": str(i)}}},
            )
            wanted = str(server.store.resource_version)
            t0 = time.perf_counter()
            reflector = cluster.reflector(PODS)
            while reflector.resource_version != wanted:
                time.sleep(0.0005)
            lags.append(time.perf_counter() - t0)
        figures["watch_lag_median_ms"] = statistics.median(lags) * 1000
        figures["watch_lag_max_ms"] = max(lags) * 1000

        victims = [f"pod-{i}" for i in range(min(evictions, pods))]
        started = time.perf_counter()
        dry = [cluster.evict(f"team-{int(v.split('-')[1]) % 10}", v, dry_run=True) for v in victims]
        figures["dry_run_evictions_per_s"] = len(victims) / (time.perf_counter() - started)
        started = time.perf_counter()
        real = [cluster.evict(f"team-{int(v.split('-')[1]) % 10}", v) for v in victims]
        figures["evictions_per_s"] = len(victims) / (time.perf_counter() - started)
        assert all(r.ok for r in dry + real)
        figures["evictions"] = len(victims)
        cluster.close()
    return figures


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=at_least_one, default=500)
    parser.add_argument("--pods", type=at_least_one, default=5000)
    parser.add_argument("--evictions", type=at_least_one, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def handle(options: argparse.Namespace) -> int:
    figures = run(options.nodes, options.pods, options.evictions)
    if options.json:
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}))
    else:
        width = max(len(k) for k in figures)
        for key, value in figures.items():
            print(f"{key:<{width}}  {value:.3f}" if isinstance(value, float) else f"{key:<{width}}  {value}")
    return 0
