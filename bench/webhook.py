"""Benchmark of the production webhook server against a minimal echo view in the same server.

Starts ``manage.py webhook serve --bench-echo`` as its own process with fresh certificates, then
drives it over TLS with keep-alive from separate load-generator processes: a closed loop of
``connections`` connections, each sending the next request as soon as the previous answer arrived.
Requests are AdmissionReviews built from the real controller-made pods in
tests/fixtures/admission/pods (mutate: as created; validate: as mutated). The echo view returns the
request body unchanged, so it pays the same network, TLS and HTTP cost and nothing else. The targets
take turns on the same connections in short slices (``Schedule``), so a neighbour's CPU use hurts
them alike.

    python manage.py bench webhook [--connections 32] [--duration 6] [--slice 0.2] [--warmup 1] [--workers 1] [--clients 1] [--json]

(formerly ``manage.py webhook bench``, still an alias). Figures and what they mean: docs/admission.md.
"""

from __future__ import annotations

import argparse
import array
import copy
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from admission import certs
from admission.inference import infer_gang
from admission.policy import AdmissionPolicy
from admission.review import review_for
from admission.server import ALLOW_PATH, ECHO_PATH
from admission.webhookconfig import MUTATE_PATH, VALIDATE_PATH
from bench.webhook_load import NAMESPACE, SERVER_NAME, SERVICE, Schedule, cpu_plan, http_requests, load

GOAL_RATIO, GOAL_P99_MS = 0.75, 20.0
VARIANTS = 256  # distinct request bodies per path (uids and names differ)


def _fixture_pods() -> list[dict[str, Any]]:
    directory = Path(settings.BASE_DIR) / "tests" / "fixtures" / "admission" / "pods"
    pods = [yaml.safe_load(path.read_text()) for path in sorted(directory.glob("*.yaml"))]
    if not pods:
        raise RuntimeError(f"no pod fixtures in {directory}")
    return pods


def build_bodies() -> dict[str, list[bytes]]:
    """Request bodies per path: the webhook paths get reviews, the echo path the mutate reviews."""
    pods = _fixture_pods()
    policy = AdmissionPolicy()
    mutate, validate = [], []
    for index in range(VARIANTS):
        pod = copy.deepcopy(pods[index % len(pods)])
        if "generateName" in pod["metadata"]:
            pod["metadata"]["name"] = f"{pod['metadata']['generateName']}{index:05x}"
        mutate.append(json.dumps(review_for(pod)).encode())
        # The validating webhook sees the pod as the mutating webhook left it.
        admitted = copy.deepcopy(pod)
        gang = infer_gang(admitted, admitted["metadata"].get("namespace", ""), policy)
        if gang is not None and not admitted["spec"].get("schedulingGroup"):
            admitted["spec"]["schedulingGroup"] = {"podGroupName": gang.name}
        validate.append(json.dumps(review_for(admitted)).encode())
    return {ECHO_PATH: mutate, ALLOW_PATH: mutate, MUTATE_PATH: mutate, VALIDATE_PATH: validate}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_ready(
    port: int, ca_pem: str, server: subprocess.Popen, log_path: Path, timeout: float = 60.0
) -> None:
    context = ssl.create_default_context(cadata=ca_pem)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"webhook server exited with {server.returncode}: {log}")
        try:
            with (
                socket.create_connection(("127.0.0.1", port), timeout=1) as raw,
                context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls,
            ):
                tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if tls.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("webhook server did not become ready")


def _summary(latencies: array.array, errors: int, seconds: float) -> dict[str, Any]:
    ordered = sorted(latencies)

    def percentile(fraction: float) -> float:
        return (
            round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000, 3) if ordered else 0.0
        )

    return {
        "requests": len(ordered),
        "errors": errors,
        "rps": round(len(ordered) / seconds, 1),
        "p50_ms": percentile(0.50),
        "p90_ms": percentile(0.90),
        "p99_ms": percentile(0.99),
        "max_ms": round(ordered[-1] * 1000, 3) if ordered else 0.0,
    }


def run_benchmark(
    *,
    connections: int = 32,
    duration: float = 6.0,
    slice_seconds: float = 0.2,
    warmup: float = 1.0,
    workers: int = 1,
    clients: int = 1,
    progress: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """``duration`` seconds measured per target, in slices of ``slice_seconds`` taken in turns."""
    say = progress or (lambda message: None)
    bodies = build_bodies()
    targets = {"echo": ECHO_PATH, "allow-all": ALLOW_PATH, "mutate": MUTATE_PATH, "validate": VALIDATE_PATH}
    names = list(targets)
    requests = [http_requests(targets[name], bodies[targets[name]]) for name in names]
    cycles = max(1, round(duration / slice_seconds))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gangweb-bench-") as directory:
        issued = certs.ensure_certificates(Path(directory), SERVICE, NAMESPACE)
        ca_pem = issued.ca.cert_pem().decode()
        port = _free_port()
        command = [
            sys.executable,
            str(Path(settings.BASE_DIR) / "manage.py"),
            "webhook",
            "serve",
            "--dir",
            directory,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--bench-echo",
        ]
        plan = cpu_plan(workers, clients)
        # The server's log goes to a file: a pipe read only at exit would fill and block it mid-run.
        log_path = Path(directory) / "server.log"
        with log_path.open("wb") as log:
            server = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=log,
                preexec_fn=(lambda: os.sched_setaffinity(0, plan[0])) if plan else None,
            )
        try:
            _wait_ready(port, ca_pem, server, log_path)
            # 0.5 s for the TLS handshakes, then the warm-up, which takes turns like the measurement.
            schedule = Schedule(names, time.monotonic() + 0.5 + warmup, slice_seconds, cycles)
            say(
                f"{len(names)} targets x {cycles} slices of {slice_seconds:g} s, taken in turns over "
                f"{connections} connections ({schedule.stop_at - time.monotonic():.0f} s)"
            )
            run = load(port, ca_pem, requests, connections, clients, schedule, plan[1] if plan else None)
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
    measured = cycles * slice_seconds
    summary = {name: _summary(run.latencies[i], run.errors[i], measured) for i, name in enumerate(names)}
    answered = run.answered
    echo = answered[0]
    # Per cycle: a target's answers over the echo view's answers in the same cycle (the same second or
    # so of machine conditions); the median resists a neighbour's bursts.
    ratios = {
        name: round(
            statistics.median(count / max(base, 1) for count, base in zip(answered[i], echo, strict=True)), 3
        )
        for i, name in enumerate(names)
        if name != "echo"
    }
    met = all(ratios[name] >= GOAL_RATIO for name in ("mutate", "validate")) and all(
        summary[name]["p99_ms"] <= GOAL_P99_MS for name in ("mutate", "validate")
    )
    return {
        "connections": connections,
        "duration_s": duration,
        "slice_s": slice_seconds,
        "cycles": cycles,
        "warmup_s": warmup,
        "server_workers": workers,
        "client_processes": clients,
        "cpus": os.cpu_count(),
        "pinned": {"server": sorted(plan[0]), "clients": [sorted(c) for c in plan[1]]} if plan else None,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "targets": summary,
        "answers_per_cycle": dict(zip(names, answered, strict=True)),
        "throughput_vs_echo": ratios,
        "goals": {"min_throughput_vs_echo": GOAL_RATIO, "max_p99_ms": GOAL_P99_MS, "met": met},
    }


def format_table(result: dict[str, Any]) -> str:
    lines = [
        f"webhook bench: {result['connections']} TLS keep-alive connections, {result['duration_s']:g} s per target "
        f"in {result['cycles']} slices of {result['slice_s']:g} s, {result['server_workers']} server worker(s), "
        f"{result['client_processes']} client process(es), {result['cpus']} CPUs"
        f"{' (server and load generator pinned to their own cores)' if result.get('pinned') else ''}, "
        f"load average before {result['loadavg_before'][0]}",
        f"{'target':<10}{'req/s':>10}{'vs echo':>9}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}",
    ]
    for name, row in result["targets"].items():
        ratio = result["throughput_vs_echo"].get(name, 1.0)
        lines.append(
            f"{name:<10}{row['rps']:>10.1f}{ratio:>9.2f}{row['p50_ms']:>9.2f}{row['p90_ms']:>9.2f}"
            f"{row['p99_ms']:>9.2f}{row['max_ms']:>9.2f}{row['errors']:>8}"
        )
    goals = result["goals"]
    lines.append(
        "vs echo: median over cycles of (answers in the target's slice / answers in the echo slice of the "
        "same cycle); allow-all: parse the review and allow it, no rules (reference, not a goal)"
    )
    lines.append(
        f"goals: >= {goals['min_throughput_vs_echo']}x echo throughput and p99 <= {goals['max_p99_ms']:g} ms: "
        f"{'met' if goals['met'] else 'NOT met'}"
    )
    return "\n".join(lines) + "\n"


# ----- ``manage.py bench webhook`` (gangweb/management/commands/bench.py)

HELP = (
    "the admission webhook over TLS against an echo view: throughput and latency (formerly `webhook bench`)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--duration", type=float, default=6.0, help="seconds measured per target")
    parser.add_argument(
        "--slice",
        type=float,
        default=0.2,
        help="seconds per turn: the targets take turns in slices this long",
    )
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=1, help="server worker processes")
    parser.add_argument("--clients", type=int, default=1, help="load generator processes")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def handle(options: argparse.Namespace) -> int:
    result = run_benchmark(
        connections=options.connections,
        duration=options.duration,
        slice_seconds=options.slice,
        warmup=options.warmup,
        workers=options.workers,
        clients=options.clients,
        progress=None if options.json else _progress,
    )
    sys.stdout.write(json.dumps(result) + "\n" if options.json else format_table(result))
    return 0
