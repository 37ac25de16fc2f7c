"""The queue read model and the ownership signals at scale: ``python manage.py bench queues``.

    python manage.py bench queues [--nodes 20000] [--queues 500] [--pending 5000] [--trials 5]
                                  [--repeat 100] [--json]

The synthetic cluster (``testkit.synthetic``: ``--nodes`` nodes of 8 GPUs, 90 % allocated) under
Kueue: ``--queues`` ClusterQueues, ten to a Cohort, each with a LocalQueue in a namespace of its own; every
running gang an admitted Workload (its pods tied to it by Kueue's ``pod-group-name`` label) and
``--pending`` Workloads waiting, spread over the queues. Timed:

- ``build``: the read model from the objects (``scheduler.queues``: the pods' facts, then each system's
  arithmetic), as the API builds it once per reading of the cluster, the engine's parse not included
  (``parse_s``, once);
- ``owners``: the ownership signals of every running pod (``ownership.owners_of``), as each planning reads
  them;
- ``event``: one Workload watch event through the adapter's cache (``Reflector`` and the live snapshot's
  listener, which leaves a queue kind alone): the model is not updated per event but rebuilt per reading;
- ``api``: ``GET /api/v1/queues/`` (the first page, 100 rows) through Django's full stack as a reader of
  every namespace; its first call builds the model, the others are served from it while a newer reading's
  is built in the background.

Beside the wall-clock p50/p99, the thread's CPU time (``*_cpu_p50_ms``): on a shared machine the wall
clock counts the other processes too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from bench import at_least_one

HELP = "the queue read model, ownership signals and GET /api/v1/queues/ at --nodes with --queues queues"
KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
BENCH_USER = "gangweb-queues-bench"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=at_least_one, default=20000, help="synthetic nodes (default 20000)")
    parser.add_argument("--queues", type=at_least_one, default=500, help="ClusterQueues (default 500)")
    parser.add_argument("--pending", type=at_least_one, default=5000, help="waiting Workloads (default 5000)")
    parser.add_argument("--trials", type=at_least_one, default=5, help="builds timed (default 5)")
    parser.add_argument("--repeat", type=at_least_one, default=100, help="API calls timed (default 100)")
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _quota(gpus: int) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": ["cpu", GPU],
            "flavors": [
                {
                    "name": "default",
                    "resources": [
                        {"name": "cpu", "nominalQuota": str(gpus * 12)},
                        {"name": GPU, "nominalQuota": str(gpus)},
                    ],
                }
            ],
        }
    ]


def kueue_world(nodes: int, queues: int, pending: int) -> list[dict[str, Any]]:
    """The synthetic cluster with Kueue's objects over it (see the module's docstring)."""
    from scheduler.kinds import is_native
    from testkit.synthetic import synthetic_cluster

    objects = synthetic_cluster(nodes)
    total = sum(int(o["status"]["allocatable"].get(GPU, 0)) for o in objects if is_native(o, "Node"))
    nominal = max(1, total // queues)
    out: list[dict[str, Any]] = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    ]
    for c in range((queues + 9) // 10):
        out.append(
            {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": f"cohort-{c:03d}"}, "spec": {}}
        )
    for q in range(queues):
        name = f"cq-{q:04d}"
        out.append(
            {
                "apiVersion": KUEUE,
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "cohortName": f"cohort-{q // 10:03d}",
                    "namespaceSelector": {},
                    "resourceGroups": _quota(nominal),
                },
            }
        )
        out.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": "main", "namespace": f"queue-{q:04d}"},
                "spec": {"clusterQueue": name},
            }
        )
    gangs: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        if is_native(obj, "Pod") and (obj["spec"].get("schedulingGroup") or {}).get("podGroupName"):
            gangs.setdefault(
                f"{obj['metadata']['namespace']}/{obj['spec']['schedulingGroup']['podGroupName']}", []
            ).append(obj)
    for g, (key, pods) in enumerate(sorted(gangs.items())):
        namespace, name = key.split("/", 1)
        gpus = sum(int(p["spec"]["containers"][0]["resources"]["requests"].get(GPU, 0)) for p in pods)
        for pod in pods:
            pod["metadata"].setdefault("labels", {})["kueue.x-k8s.io/pod-group-name"] = name
        out.append(_workload(namespace, name, len(pods), admitted=f"cq-{g % queues:04d}", gpus=gpus))
    for w in range(pending):
        out.append(_workload(f"queue-{w % queues:04d}", f"waiting-{w:05d}", 2, admitted=None, gpus=16))
    return objects + out


def _workload(namespace: str, name: str, pods: int, *, admitted: str | None, gpus: int) -> dict[str, Any]:
    per_pod = {"cpu": "8", GPU: str(max(1, gpus // max(1, pods)))}
    workload: dict[str, Any] = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-12-01T00:00:00Z"},
        "spec": {
            "queueName": "main",
            "podSets": [
                {
                    "name": "main",
                    "count": pods,
                    "template": {"spec": {"containers": [{"name": "m", "resources": {"requests": per_pod}}]}},
                }
            ],
        },
    }
    if admitted:
        workload["status"] = {
            "admission": {
                "clusterQueue": admitted,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": pods,
                        "flavors": {"cpu": "default", GPU: "default"},
                        "resourceUsage": {"cpu": str(8 * pods), GPU: str(gpus)},
                    }
                ],
            },
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ],
        }
    else:
        workload["status"] = {
            "conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]
        }
    return workload


class _Cluster:
    """The objects, read through ``get_cluster`` like any cluster's."""

    name = "bench-queues"

    def __init__(self, objects: list[dict[str, Any]]):
        self.objects = objects

    def snapshot_objects(self) -> list[dict[str, Any]]:
        return self.objects


def _event_costs(objects: list[dict[str, Any]], count: int) -> list[float]:
    from scheduler.engine.caching.live import LiveSnapshot
    from scheduler.kube.informer import Reflector
    from scheduler.kube.resources import QUEUE_RESOURCES

    workloads = next(r for r in QUEUE_RESOURCES if r.kind == "Workload")
    live = LiveSnapshot(objects)
    reflector = Reflector(None, workloads, listener=lambda type_, _r, obj: live.apply(type_, obj))  # type: ignore[arg-type]
    samples = [o for o in objects if o.get("kind") == "Workload"][:count]
    costs = []
    for i, obj in enumerate(samples):
        event = {
            "type": "MODIFIED",
            "object": {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(i + 1)}},
        }
        started = time.perf_counter()
        reflector._apply(event)
        costs.append((time.perf_counter() - started) * 1e6)
    return costs


def _api(objects: list[dict[str, Any]], repeat: int) -> dict[str, float]:
    from django.contrib.auth import get_user_model
    from django.test import Client, override_settings

    from bench.timing import timed
    from gangweb.access.grants import grant
    from gangweb.clusterview import rows as cluster_rows
    from scheduler.preemption.runtime import get_cluster, set_cluster

    grant(BENCH_USER, "viewer", all_namespaces=True)
    user = get_user_model().objects.get(username=BENCH_USER)
    own = get_cluster()
    try:
        set_cluster(_Cluster(objects))  # type: ignore[arg-type]
        cluster_rows.forget()
        client = Client()
        client.force_login(user)

        def call():
            answer = client.get("/api/v1/queues/")
            assert answer.status_code == 200, answer.content[:300]
            return answer

        with override_settings(ALLOWED_HOSTS=["testserver"]):  # Django's in-process client
            return timed(call, repeat)
    finally:
        set_cluster(own)
        cluster_rows.forget()
        user.delete()


def handle(options: argparse.Namespace) -> int:
    import gc

    from scheduler.engine import parse_snapshot
    from scheduler.queues import queues_from
    from scheduler.queues.cluster import build_reading
    from scheduler.queues.ownership import owners_of

    started = time.perf_counter()
    objects = kueue_world(options.nodes, options.queues, options.pending)
    made_s = time.perf_counter() - started
    print(f"built {len(objects):,} objects in {made_s:.1f} s", file=sys.stderr)
    started = time.perf_counter()
    snapshot = parse_snapshot(objects)
    parse_s = time.perf_counter() - started
    builds, owner_runs, build_cpu, owner_cpu = [], [], [], []
    model = None
    for _ in range(options.trials):
        gc.collect()
        started, cpu = time.perf_counter(), time.thread_time()
        model = queues_from(build_reading(objects, snapshot))
        builds.append((time.perf_counter() - started) * 1000)
        build_cpu.append((time.thread_time() - cpu) * 1000)
        started, cpu = time.perf_counter(), time.thread_time()
        owned = owners_of(objects, snapshot)
        owner_runs.append((time.perf_counter() - started) * 1000)
        owner_cpu.append((time.thread_time() - cpu) * 1000)
    assert model is not None
    events = _event_costs(objects, 1000)
    api = _api(objects, options.repeat)
    result = {
        "nodes": options.nodes,
        "objects": len(objects),
        "queues": len(model.queues),
        "pending": sum(len(q.pending) for q in model.queues if q.kind == "ClusterQueue"),
        "ownedPods": len(owned),
        "parse_s": round(parse_s, 2),
        "build_p50_ms": round(_pct(builds, 50), 1),
        "build_p99_ms": round(_pct(builds, 99), 1),
        "build_cpu_p50_ms": round(_pct(build_cpu, 50), 1),
        "owners_p50_ms": round(_pct(owner_runs, 50), 1),
        "owners_p99_ms": round(_pct(owner_runs, 99), 1),
        "owners_cpu_p50_ms": round(_pct(owner_cpu, 50), 1),
        "event_p50_us": round(_pct(events, 50), 1),
        "event_p99_us": round(_pct(events, 99), 1),
        "api_first_ms": api["first_ms"],
        "api_p50_ms": api["p50_ms"],
        "api_p99_ms": api["p99_ms"],
        "api_cpu_p50_ms": api["cpu_p50_ms"],
        "trials": options.trials,
        "repeat": options.repeat,
    }
    if options.json:
        print(json.dumps(result))
        return 0
    rows = [
        ("read model build", f"{result['build_p50_ms']:.1f} ms", f"{result['build_p99_ms']:.1f} ms"),
        ("ownership signals", f"{result['owners_p50_ms']:.1f} ms", f"{result['owners_p99_ms']:.1f} ms"),
        ("one Workload event", f"{result['event_p50_us']:.1f} µs", f"{result['event_p99_us']:.1f} µs"),
        ("GET /api/v1/queues/", f"{result['api_p50_ms']:.1f} ms", f"{result['api_p99_ms']:.1f} ms"),
    ]
    print(
        f"{result['nodes']:,} nodes, {result['objects']:,} objects, {result['queues']} queues, "
        f"{result['pending']:,} pending gangs, {result['ownedPods']:,} Kueue-owned pods; parse {result['parse_s']} s; "
        f"first API call {result['api_first_ms']:.0f} ms"
    )
    cpu = {
        "read model build": "build_cpu_p50_ms",
        "ownership signals": "owners_cpu_p50_ms",
        "GET /api/v1/queues/": "api_cpu_p50_ms",
    }
    print(f"{'':<22}{'p50':>12}{'p99':>12}{'CPU p50':>12}")
    for name, p50, p99 in rows:
        own = f"{result[cpu[name]]:.1f} ms" if name in cpu else ""
        print(f"{name:<22}{p50:>12}{p99:>12}{own:>12}")
    return 0
