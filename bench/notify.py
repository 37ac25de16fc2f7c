"""``manage.py bench notify``: ledger commit -> delivery at a steady rate, into a local sink.

A CloudEvents sink on 127.0.0.1 (this process, a threaded HTTP server) is added for every namespace and
one real Celery worker is started beside it (prefork, ``--concurrency``; this shell's ``REDIS_URL`` and
``DATABASE_URL``). Then ``--rate`` ledger writes a second for ``--seconds`` (``ledger.open_request`` of
gangs in the namespace ``bench-notify``: one transaction, one ``request.opened`` each) are committed from
this process on a fixed schedule, and each delivery's latency is its arrival at the sink minus the
moment its transaction returned. Reported: p50, p99 and max latency, what was sent and received,
duplicates (the same id twice), and whether the p99 meets the goal (``--goal`` seconds). The sink, the
gangs' requests and their deliveries are removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scheduler.argtypes import at_least_one

HELP = "ledger commit -> notification delivery latency at a steady rate into a local sink"
NAMESPACE = "bench-notify"
SINK = "bench-notify"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate", type=at_least_one, default=100, help="ledger events a second (default 100)")
    parser.add_argument("--seconds", type=at_least_one, default=20, help="how long to send (default 20)")
    parser.add_argument(
        "--concurrency", type=at_least_one, default=2, help="the worker's processes (default 2)"
    )
    parser.add_argument("--goal", type=float, default=5.0, help="the p99 latency goal in seconds (default 5)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


class _Receiver:
    """The local sink: the first arrival of each request's event, and how many came twice."""

    def __init__(self) -> None:
        self.arrived: dict[int, float] = {}
        self.duplicates = 0
        self._ids: set[str] = set()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                event = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                now = time.time()
                with receiver._lock:
                    if event["id"] in receiver._ids:
                        receiver.duplicates += 1
                    else:
                        receiver._ids.add(event["id"])
                        receiver.arrived.setdefault(event["data"]["request"], now)
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/events"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self) -> int:
        with self._lock:
            return len(self.arrived)


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def _clean() -> None:
    from gangweb.notify.models import Sink
    from scheduler.preemption.models import PreemptionRequest

    Sink.objects.filter(name=SINK).delete()
    PreemptionRequest.objects.filter(namespace=NAMESPACE).delete()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def handle(options: argparse.Namespace) -> int:
    from django.conf import settings

    from gangweb.notify import config
    from scheduler.preemption import ledger

    if not os.environ.get("REDIS_URL"):
        sys.stderr.write("bench notify: error: set REDIS_URL (the worker's broker)\n")
        return 2
    _clean()
    receiver = _Receiver()
    settings.GANGWEB_NOTIFY_ALLOWED_HOSTS = [*settings.GANGWEB_NOTIFY_ALLOWED_HOSTS, "127.0.0.1"]
    config.add_sink(SINK, kind="cloudevents", url=receiver.url, all_namespaces=True, kinds=["request.opened"])
    log_path = Path(tempfile.mkdtemp(prefix="bench-notify-")) / "worker.log"
    env = {**os.environ, "GANGWEB_NOTIFY_ALLOWED_HOSTS": "127.0.0.1", "GANGWEB_DEMO": "0"}
    with open(log_path, "ab") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "gangweb", "worker", "--pool=prefork"]
            + [f"--concurrency={options.concurrency}", "--loglevel=WARNING"]
            + ["--without-gossip", "--without-mingle", "--without-heartbeat"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    committed: dict[int, float] = {}
    try:
        warm, _ = ledger.open_request(NAMESPACE, "warm-up", mode="enforce", trigger="bench notify")
        _wait(lambda: warm.pk in receiver.arrived, 120, f"the worker's first delivery (log {log_path})")
        total = options.rate * options.seconds
        started = time.monotonic()
        late = 0.0
        for i in range(total):
            due = started + i / options.rate
            if (pause := due - time.monotonic()) > 0:
                time.sleep(pause)
            else:
                late = max(late, -pause)
            request, _ = ledger.open_request(NAMESPACE, f"gang-{i}", mode="enforce", trigger="bench notify")
            committed[request.pk] = time.time()
        sent_seconds = time.monotonic() - started
        _wait(
            lambda: all(pk in receiver.arrived for pk in committed),
            120,
            f"every delivery ({receiver.count()} of {len(committed) + 1} arrived; log {log_path})",
        )
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
        receiver.server.shutdown()
        _clean()
    latencies = [receiver.arrived[pk] - at for pk, at in committed.items()]
    figures = {
        "rate_per_s": options.rate,
        "events": len(committed),
        "sent_in_s": round(sent_seconds, 2),
        "sender_late_max_s": round(late, 3),
        "worker_concurrency": options.concurrency,
        "received": len(latencies),
        "duplicates": receiver.duplicates,
        "p50_s": round(_percentile(latencies, 0.50), 3),
        "p99_s": round(_percentile(latencies, 0.99), 3),
        "max_s": round(max(latencies), 3),
        "goal_p99_s": options.goal,
    }
    figures["meets_goal"] = figures["p99_s"] <= options.goal
    if options.json:
        print(json.dumps(figures))
        return 0
    width = max(len(k) for k in figures)
    print("bench notify: ledger commit -> delivery into a local CloudEvents sink")
    for key, value in figures.items():
        print(f"  {key.ljust(width)}  {value}")
    return 0
