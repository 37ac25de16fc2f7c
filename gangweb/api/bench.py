"""Read-path benchmark: how long the API and the dashboard's data take on a filled ledger.

    python manage.py bench api [--requests 200] [--victims 64] [--repeat 20] [--json]

Writes ``--requests`` finished requests, each with one plan of ``--victims`` evicted pods and the
history a real execution leaves (about two entries per pod), into the PostgreSQL database
``DATABASE_URL`` names, in a namespace of its own (removed afterwards). Then times, in process
through Django's full middleware stack with a signed-in user, each read a platform team or the
dashboard makes, and ``POST /api/plan/`` on the settings' cluster (the simulated one by default).
Printed per call: the first (cold) call, median and p95 milliseconds over ``--repeat`` more calls,
and the response size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from scheduler.bench import at_least_one

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


def timed(call, repeat: int) -> dict:
    """p50/p95 over ``repeat`` warm calls; the first (cold: imports, template loading) is reported apart."""
    started = time.perf_counter()
    call()
    first = (time.perf_counter() - started) * 1000
    samples, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        response = call()
        samples.append((time.perf_counter() - started) * 1000)
        if response.status_code >= 400:
            raise SystemExit(f"error: {response.status_code} {response.content[:300]!r}")
        size = len(response.content)
    samples.sort()
    return {
        "first_ms": round(first, 1),
        "p50_ms": round(statistics.median(samples), 1),
        "p95_ms": round(samples[min(len(samples) - 1, int(0.95 * len(samples)))], 1),
        "bytes": size,
    }


def run(requests: int, victims: int, repeat: int) -> list[dict]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db.models import Max
    from django.test import Client

    from gangweb.dashboard import live
    from scheduler.preemption.models import LedgerEntry, PreemptionRequest

    # A superuser: every namespace, as the coordinator's scope rules read it until roles land.
    user, _ = get_user_model().objects.get_or_create(
        username=BENCH_USER, defaults={"is_superuser": True, "is_staff": True}
    )
    try:
        ids = fill(requests, victims)
        client = Client()
        client.force_login(user)
        newest = LedgerEntry.objects.aggregate(top=Max("id"))["top"]
        picture, _ = live.current()
        waiting = [g["key"] for g in picture["gangs"] if g["state"] == "waiting"]
        calls = [
            ("GET /api/requests/", lambda: client.get("/api/requests/")),
            (
                f"GET /api/requests/{{id}}/ ({victims} evictions)",
                lambda: client.get(f"/api/requests/{ids[-1]}/"),
            ),
            ("GET /api/evictions/?state=evicted", lambda: client.get("/api/evictions/?state=evicted")),
            ("GET /api/ledger/", lambda: client.get("/api/ledger/")),
            ("GET /api/ledger/?since=<newest-50>", lambda: client.get(f"/api/ledger/?since={newest - 50}")),
            ("GET /dashboard/data/preemptions", lambda: client.get("/dashboard/data/preemptions")),
            ("GET /dashboard/data/gangs", lambda: client.get("/dashboard/data/gangs")),
            ("GET /dashboard/data/picture", lambda: client.get("/dashboard/data/picture")),
            ("GET / (the overview's shell)", lambda: client.get("/")),
        ]
        if waiting:
            calls.append(
                (
                    f"POST /api/plan/ ({settings.GANGWEB_CLUSTER})",
                    lambda: client.post(
                        "/api/plan/", {"podGroup": waiting[0]}, content_type="application/json"
                    ),
                )
            )
        return [{"call": name, **timed(call, repeat)} for name, call in calls]
    finally:
        PreemptionRequest.objects.filter(namespace=BENCH_NAMESPACE).delete()
        user.delete()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=at_least_one, default=200)
    parser.add_argument("--victims", type=at_least_one, default=64)
    parser.add_argument("--repeat", type=at_least_one, default=20)
    parser.add_argument("--json", action="store_true")


def handle(args: argparse.Namespace) -> int:
    from django.test.utils import override_settings

    with override_settings(ALLOWED_HOSTS=["testserver"]):  # Django's in-process client
        rows = run(args.requests, args.victims, args.repeat)
    if args.json:
        print(
            json.dumps(
                {
                    "benchmark": "api-reads",
                    "requests": args.requests,
                    "victims": args.victims,
                    "repeat": args.repeat,
                    "rows": rows,
                }
            )
        )
        return 0
    print(f"ledger: {args.requests} requests x {args.victims} evicted pods; {args.repeat} calls each")
    print(f"{'call':<44} {'first ms':>9} {'p50 ms':>8} {'p95 ms':>8} {'bytes':>9}")
    for row in rows:
        print(
            f"{row['call']:<44} {row['first_ms']:>9} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['bytes']:>9}"
        )
    return 0
