"""Read-path benchmark: how long the API (v1 and the deprecated paths) and the dashboard's data take.

    python manage.py bench api [--requests 151] [--victims 64] [--podgroups 5000] [--repeat 100]
                               [--gc settled|default] [--json]

Writes ``--requests`` finished requests, each with one plan of ``--victims`` evicted pods and the
history a real execution leaves (133 entries each at 64 victims: 151 requests are 20,083 ledger rows),
into the PostgreSQL database ``DATABASE_URL`` names, in a namespace of its own (removed afterwards).
The live cluster is an in-memory one of ``--podgroups`` gangs (two 2-GPU pods each, in 100 namespaces,
80% placed) on 8-GPU nodes, read through ``get_cluster`` like any other. Then times, in process through
Django's full middleware stack with a signed-in admin, each read a platform team or the dashboard
makes, and ``POST /api/v1/simulate/`` on the small cluster of the settings (the simulated one by
default). Printed per call: the first (cold) call, p50 and p99 milliseconds over ``--repeat`` more
calls, the same per call in the thread's CPU time, the garbage collector's milliseconds by generation, and
the response size. The cluster rows are rebuilt every ``GANGWEB_API_CLUSTER_CACHE_SECONDS``
(5 s), so those rebuilds are in the p99.
"""

from __future__ import annotations

import argparse
import json

from bench import at_least_one
from bench.timing import timed

HELP = "the REST API's and the dashboard's reads on a filled ledger; needs DATABASE_URL"
BENCH_NAMESPACE = "gangweb-api-bench"
BENCH_USER = "gangweb-api-bench"


def fill(requests: int, victims: int) -> list[int]:
    """Ledger rows shaped like the pipeline's, written in bulk (the ledger's own functions take minutes)."""
    from django.db import transaction
    from django.utils import timezone

    from scheduler.preemption.models import Eviction, LedgerEntry, Plan, PreemptionRequest, RequestState

    now = timezone.now()
    ids = []
    with transaction.atomic():
        for r in range(requests):
            name = f"train-{r:04d}"
            request = PreemptionRequest.objects.create(
                namespace=BENCH_NAMESPACE,
                name=name,
                state=RequestState.SUCCEEDED,
                trigger="benchmark",
                reason=f"evicted {victims} pods",
                planned_at=now,
                execution_started_at=now,
                finished_at=now,
            )
            pods = [f"bench-batch/victim-{r}-{v}" for v in range(victims)]
            units = [pods[i : i + 8] for i in range(0, victims, 8)]
            plan = Plan.objects.create(
                request=request,
                policy="gangweb",
                feasible=True,
                evictions=sorted(pods),
                victims=[
                    {
                        "kind": "PodGroup",
                        "namespace": "bench-batch",
                        "name": f"low-{r}-{u}",
                        "priority": 10,
                        "pods": unit,
                    }
                    for u, unit in enumerate(units)
                ],
                placement={f"{BENCH_NAMESPACE}/{name}-{g}": f"node-{g}" for g in range(max(victims // 8, 1))},
                reason="benchmark",
                victim_units=len(units),
                evicted_pods=victims,
                evicted_gpus=victims,
                max_victim_priority=10,
                victim_priority_sum=10 * len(units),
                lost_gpu_seconds=3600.0 * victims,
            )
            Eviction.objects.bulk_create(
                Eviction(
                    plan=plan,
                    namespace="bench-batch",
                    name=pod.split("/")[1],
                    node=f"node-{v // 8}",
                    gpus=1,
                    victim_unit=f"PodGroup bench-batch/low-{r}-{v // 8}",
                    state="evicted",
                    attempts=1,
                    dry_run_code=201,
                    api_code=201,
                    dry_run_at=now,
                    requested_at=now,
                    finished_at=now,
                )
                for v, pod in enumerate(pods)
            )
            entries = [
                LedgerEntry(
                    kind=kind,
                    request=request,
                    plan=plan,
                    namespace=BENCH_NAMESPACE,
                    name=name,
                    message=f"{kind} {name}",
                )
                for kind in ("request.opened", "request.planning", "plan.created", "request.executing")
            ]
            entries += [
                LedgerEntry(
                    kind=kind,
                    request=request,
                    plan=plan,
                    namespace=BENCH_NAMESPACE,
                    name=name,
                    message=f"{kind} {pod}",
                    data={"pod": pod},
                )
                for pod in pods
                for kind in ("eviction.dry_run", "eviction.result")
            ]
            entries.append(
                LedgerEntry(
                    kind="request.succeeded",
                    request=request,
                    namespace=BENCH_NAMESPACE,
                    name=name,
                    message="done",
                )
            )
            LedgerEntry.objects.bulk_create(entries)
            ids.append(request.pk)
    return ids


class BenchCluster:
    """``--podgroups`` gangs on enough 8-GPU nodes, as raw objects (the ``Cluster`` protocol's reads)."""

    name = "bench"

    def __init__(self, podgroups: int):
        gpu = "nvidia.com/gpu"
        running = int(podgroups * 0.8)
        nodes = (running * 4 + 7) // 8 + 4
        self.objects = [
            {
                "kind": "Node",
                "metadata": {
                    "name": f"node-{n:05d}",
                    "labels": {"topology.gangweb.io/rack": f"rack-{n // 16}"},
                },
                "spec": {},
                "status": {
                    "allocatable": {"cpu": "64", gpu: "8"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
            for n in range(nodes)
        ]
        for g in range(podgroups):
            namespace, name = f"bench-team-{g % 100:03d}", f"gang-{g:05d}"
            self.objects.append(
                {
                    "kind": "PodGroup",
                    "metadata": {
                        "namespace": namespace,
                        "name": name,
                        "creationTimestamp": "2026-12-01T00:00:00Z",
                    },
                    "spec": {
                        "schedulingPolicy": {"gang": {"minCount": 2}},
                        "priority": 10 * (g % 4),
                        "disruptionMode": {"all": {}},
                    },
                }
            )
            for i in range(2):
                spec = {
                    "schedulingGroup": {"podGroupName": name},
                    "containers": [
                        {"name": "m", "resources": {"requests": {gpu: "2"}, "limits": {gpu: "2"}}}
                    ],
                }
                if g < running:
                    spec["nodeName"] = f"node-{(g * 2 + i) // 4:05d}"
                self.objects.append(
                    {
                        "kind": "Pod",
                        "metadata": {
                            "namespace": namespace,
                            "name": f"{name}-{i}",
                            "creationTimestamp": "2026-12-01T00:00:00Z",
                        },
                        "spec": spec,
                        "status": {"phase": "Running" if g < running else "Pending"},
                    }
                )

    def snapshot_objects(self):
        return self.objects


def run(requests: int, victims: int, repeat: int, podgroups: int = 5000) -> list[dict]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db.models import Max
    from django.test import Client
    from rest_framework.throttling import ScopedRateThrottle

    from gangweb.access.grants import grant
    from gangweb.dashboard import live
    from scheduler.preemption.models import LedgerEntry, PreemptionRequest
    from scheduler.preemption.runtime import get_cluster, set_cluster

    grant(BENCH_USER, "viewer", all_namespaces=True)  # a reader of everything (docs/design.md, "Access")
    user = get_user_model().objects.get(username=BENCH_USER)
    own_cluster = get_cluster()
    try:
        ids = fill(requests, victims)
        client = Client()
        client.force_login(user)
        newest = LedgerEntry.objects.aggregate(top=Max("id"))["top"]
        picture, _ = live.current()
        waiting = [g["key"] for g in picture["gangs"] if g["state"] == "waiting"]
        simulate = [
            (
                f"POST /api/v1/simulate/ 3 policies ({settings.GANGWEB_CLUSTER})",
                lambda: client.post(
                    "/api/v1/simulate/",
                    {"podGroup": waiting[0], "policies": ["gangweb", "kep5710", "legacy"]},
                    content_type="application/json",
                ),
            ),
            (
                f"POST /api/plan/ ({settings.GANGWEB_CLUSTER})",
                lambda: client.post("/api/plan/", {"podGroup": waiting[0]}, content_type="application/json"),
            ),
            (
                f"POST /api/v1/simulate/ 3 policies, maps (What if?, {settings.GANGWEB_CLUSTER})",
                lambda: client.post(
                    "/api/v1/simulate/",
                    {"podGroup": waiting[0], "policies": ["gangweb", "kep5710", "legacy"], "maps": True},
                    content_type="application/json",
                ),
            ),
            (
                f"POST /api/v1/simulate/podgroups/ (the lab's list, {settings.GANGWEB_CLUSTER})",
                lambda: client.post("/api/v1/simulate/podgroups/", {}, content_type="application/json"),
            ),
        ]
        # The benchmark measures the work, not the per-user throttle (its 30/min would stop the loop).
        rates = ScopedRateThrottle.THROTTLE_RATES
        ScopedRateThrottle.THROTTLE_RATES = {**rates, "simulate": None}
        try:
            rows = [{"call": name, **timed(call, max(3, repeat // 10))} for name, call in simulate if waiting]
        finally:
            ScopedRateThrottle.THROTTLE_RATES = rates
        set_cluster(BenchCluster(podgroups))
        live.reset()  # map/ and overview/ draw the bench's cluster (1,004 nodes, 5,000 PodGroups)
        gang = "bench-team-007/gang-00007"
        calls = [
            ("GET /api/v1/nodes/", lambda: client.get("/api/v1/nodes/")),
            ("GET /api/v1/podgroups/", lambda: client.get("/api/v1/podgroups/")),
            ("GET /api/v1/podgroups/?offset=4900", lambda: client.get("/api/v1/podgroups/?offset=4900")),
            ("GET /api/v1/podgroups/{ns}/{name}/", lambda: client.get(f"/api/v1/podgroups/{gang}/")),
            ("GET /api/v1/pending/", lambda: client.get("/api/v1/pending/")),
            ("GET /api/v1/usage/", lambda: client.get("/api/v1/usage/")),
            ("GET /api/v1/decisions/", lambda: client.get("/api/v1/decisions/")),
            ("GET /api/v1/requests/", lambda: client.get("/api/v1/requests/")),
            ("GET /api/v1/plans/", lambda: client.get("/api/v1/plans/")),
            ("GET /api/v1/evictions/", lambda: client.get("/api/v1/evictions/")),
            ("GET /api/v1/ledger/", lambda: client.get("/api/v1/ledger/")),
            (
                "GET /api/v1/ledger/?kind=plan.created",
                lambda: client.get("/api/v1/ledger/?kind=plan.created"),
            ),
            ("GET /api/v1/ledger/?offset=19000", lambda: client.get("/api/v1/ledger/?offset=19000")),
            ("GET /api/requests/ (deprecated alias)", lambda: client.get("/api/requests/")),
            (
                f"GET /api/requests/{{id}}/ ({victims} evictions)",
                lambda: client.get(f"/api/requests/{ids[-1]}/"),
            ),
            ("GET /api/evictions/?state=evicted", lambda: client.get("/api/evictions/?state=evicted")),
            ("GET /api/ledger/", lambda: client.get("/api/ledger/")),
            ("GET /api/ledger/?since=<newest-50>", lambda: client.get(f"/api/ledger/?since={newest - 50}")),
            (
                "GET /api/v1/preemptions/?limit=1000 (the /preemptions/ page)",
                lambda: client.get("/api/v1/preemptions/?limit=1000"),
            ),
            (
                "GET /api/v1/preemptions/lost-gpu-hours/",
                lambda: client.get("/api/v1/preemptions/lost-gpu-hours/"),
            ),
            (
                "GET /api/v1/decisions/groups/?limit=1000",
                lambda: client.get("/api/v1/decisions/groups/?limit=1000"),
            ),
            ("GET /api/v1/decisions/summary/", lambda: client.get("/api/v1/decisions/summary/")),
            (
                "GET /api/v1/podgroups/?sort=waiting (the /gangs/ page, 100 a page)",
                lambda: client.get("/api/v1/podgroups/?sort=waiting"),
            ),
            (
                "GET /api/v1/podgroups/?sort=waiting&limit=1000",
                lambda: client.get("/api/v1/podgroups/?sort=waiting&limit=1000"),
            ),
            ("GET /api/v1/map/ (the overview's map, 1,004 nodes)", lambda: client.get("/api/v1/map/")),
            ("GET /api/v1/overview/", lambda: client.get("/api/v1/overview/")),
            ("GET / (the overview's shell)", lambda: client.get("/")),
        ]
        return [{"call": name, **timed(call, repeat)} for name, call in calls] + rows
    finally:
        set_cluster(own_cluster)
        live.reset()
        PreemptionRequest.objects.filter(namespace=BENCH_NAMESPACE).delete()
        user.delete()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=at_least_one, default=151)
    parser.add_argument("--victims", type=at_least_one, default=64)
    parser.add_argument("--podgroups", type=at_least_one, default=5000)
    parser.add_argument("--repeat", type=at_least_one, default=100)
    parser.add_argument(
        "--gc",
        choices=("settled", "default"),
        default="settled",
        help="settled: the heap as gangweb.asgi leaves it (gangweb.heap.settle); default: Python's own",
    )
    parser.add_argument("--json", action="store_true")


def handle(args: argparse.Namespace) -> int:
    from django.test.utils import override_settings

    from gangweb.heap import settle

    if args.gc == "settled":
        settle()  # as gangweb.asgi does before the server's first request

    with override_settings(ALLOWED_HOSTS=["testserver"]):  # Django's in-process client
        rows = run(args.requests, args.victims, args.repeat, args.podgroups)
    if args.json:
        print(
            json.dumps(
                {
                    "benchmark": "api-reads",
                    "requests": args.requests,
                    "victims": args.victims,
                    "podgroups": args.podgroups,
                    "repeat": args.repeat,
                    "gc": args.gc,
                    "rows": rows,
                }
            )
        )
        return 0
    print(
        f"ledger: {args.requests} requests x {args.victims} evicted pods ({args.requests * (2 * args.victims + 5):,}"
        f" ledger rows); cluster: {args.podgroups:,} PodGroups; {args.repeat} calls each (simulate: a tenth)"
    )
    print(
        f"{'call':<48} {'first ms':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu p50':>8} {'cpu p99':>8}"
        f" {'gc ms (gen 0/1/2)':>20} {'bytes':>9}"
    )
    for row in rows:
        collected = "/".join(f"{ms:g}" for ms in row["gc_ms"])
        print(
            f"{row['call']:<48} {row['first_ms']:>9} {row['p50_ms']:>8} {row['p99_ms']:>8}"
            f" {row['cpu_p50_ms']:>8} {row['cpu_p99_ms']:>8} {collected:>20} {row['bytes']:>9}"
        )
    return 0
