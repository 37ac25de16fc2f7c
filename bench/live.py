"""Live stream benchmark: events through channels-redis to websocket clients, publish to receipt.

    python manage.py bench live [--rate 1000] [--seconds 10] [--clients 20] [--json]

Starts gangweb's ASGI application in a uvicorn process (as deployed) on ``REDIS_URL`` and ``DATABASE_URL`` (the
deployment's shape: a signed-in user, the Redis channel layer, the topic log in Redis), opens
``--clients`` websockets subscribed to the ``activity`` topic, and publishes ``--rate`` events a second
for ``--seconds`` from this process through ``gangweb.events.send`` (numbered, logged, group-sent, as
the pipeline does). Each client notes when each event arrives; the table gives publish-to-receipt
p50/p90/p99/max in milliseconds over all clients, and what was lost or came twice. Goal: p99 <= 250 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench import at_least_one
from gangweb import webserver

HELP = "events through channels-redis to websocket clients: publish-to-receipt p50/p99; needs REDIS_URL"
BENCH_USER = "gangweb-live-bench"
GOAL_P99_MS = 250


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate", type=at_least_one, default=1000, help="events a second (default 1000)")
    parser.add_argument("--seconds", type=at_least_one, default=10, help="how long to publish (default 10)")
    parser.add_argument("--clients", type=at_least_one, default=20, help="websocket clients (default 20)")
    parser.add_argument(
        "--publishers", type=at_least_one, default=1, help="publishing threads sharing the rate (default 1)"
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="publish with gangweb.events.send, waiting for each event's number (default: publish, as the pipeline does)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")


def _session_cookie() -> str:
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    # A superuser: every namespace, as scope_for reads it until the access work's roles land.
    user, _ = get_user_model().objects.get_or_create(
        username=BENCH_USER, defaults={"is_superuser": True, "is_staff": True}
    )
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def _cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of this process, or of process ``pid`` (Linux /proc)."""
    if pid is None:
        times = os.times()
        return times.user + times.system
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_server(port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "GANGWEB_DEMO": "",
        "GANGWEB_SIM_TICK_SECONDS": "0",  # no map ticker: the stream alone is measured
        "GANGWEB_MAP_REFRESH_SECONDS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
    }
    return webserver.start(port, env)


def _publish(rate: int, seconds: int, run: str, part: int = 0, parts: int = 1, wait: bool = False) -> dict:
    from gangweb.events import publish, send

    publisher = send if wait else publish

    total = rate * seconds
    started = time.perf_counter()
    failed = 0
    for n in range(part, total, parts):
        due = started + n / rate
        if (ahead := due - time.perf_counter()) > 0:
            time.sleep(ahead)
        try:
            publisher("bench.live", {"run": run, "n": n, "t": time.time()})
        except Exception:
            failed += 1
    took = time.perf_counter() - started
    mine = len(range(part, total, parts))
    return {"sent": mine - failed, "failed": failed, "seconds": took, "cpu": time.thread_time()}


def _warm_up(run: str) -> None:
    from gangweb.events import send

    send("bench.warm-up", {"run": run})


async def _client(port: int, cookie: str, run: str, got: list, ready: asyncio.Event, count: list) -> None:
    import websockets

    async with websockets.connect(
        f"ws://127.0.0.1:{port}/ws/live/",
        origin=f"http://127.0.0.1:{port}",
        additional_headers={"Cookie": cookie},
        max_size=None,
    ) as ws:
        await ws.send(json.dumps({"type": "subscribe", "topics": {"activity": None}}))
        while json.loads(await ws.recv())["type"] != "subscribed":
            pass
        count[0] += 1
        ready.set()
        seen: set[int] = set()
        while True:
            frame = json.loads(await ws.recv())
            arrived = time.time()
            for message in frame["messages"] if frame.get("type") == "batch" else [frame]:
                payload = message.get("payload") or {}
                if message.get("type") == "resync":
                    count[1] += 1
                if message.get("type") != "bench.live" or payload.get("run") != run:
                    continue
                got.append((arrived - payload["t"], payload["n"] in seen))
                seen.add(payload["n"])


async def _measure(options: argparse.Namespace, cookie: str) -> dict:
    port = webserver.free_port()
    server = _start_server(port)
    run = f"{os.getpid()}-{time.time_ns()}"
    tasks = []
    try:
        await asyncio.to_thread(webserver.wait_listening, port, server)
        got: list[tuple[float, bool]] = []
        connected = [0, 0]  # subscribed clients, resyncs received
        ready = asyncio.Event()
        tasks = [
            asyncio.create_task(_client(port, cookie, run, got, ready, connected))
            for _ in range(options.clients)
        ]
        deadline = time.monotonic() + 30
        while connected[0] < options.clients and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if connected[0] < options.clients:
            why = next((repr(t.exception()) for t in tasks if t.done() and t.exception()), "no answer")
            raise RuntimeError(f"only {connected[0]} of {options.clients} clients subscribed: {why}")
        done = threading.Event()
        result: dict = {}

        parts: list[dict] = []

        def publisher(part: int) -> None:
            parts.append(_publish(options.rate, options.seconds, run, part, options.publishers, options.wait))
            if len(parts) == options.publishers:
                done.set()

        # The publisher's loop, Redis connections and scripts are made by its first send, not timed.
        await asyncio.to_thread(_warm_up, run)
        cpu_before = (_cpu_seconds(server.pid), _cpu_seconds(), time.monotonic())
        for part in range(options.publishers):
            threading.Thread(target=publisher, args=(part,), daemon=True).start()
        while not done.is_set():
            await asyncio.sleep(0.1)
        took = max(p["seconds"] for p in parts)
        sent = sum(p["sent"] for p in parts)
        result.update(
            sent=sent,
            failed=sum(p["failed"] for p in parts),
            rate=(sent + sum(p["failed"] for p in parts)) / took,
        )
        expected = result["sent"] * options.clients
        settle = time.monotonic() + 10
        while len(got) < expected and time.monotonic() < settle:
            await asyncio.sleep(0.1)
        wall = time.monotonic() - cpu_before[2]
        # Where the CPU went, in % of one core over publishing + settling (2 cores: 200 % in all).
        result.update(
            serverCpuPct=round(100 * (_cpu_seconds(server.pid) - cpu_before[0]) / wall),
            benchCpuPct=round(100 * (_cpu_seconds() - cpu_before[1]) / wall),
            publisherCpuPct=round(100 * sum(p["cpu"] for p in parts) / wall),
        )
        resyncs = connected[1]
    finally:
        for task in tasks:
            task.cancel()
        server.terminate()
        server.wait(timeout=20)
    latencies = sorted(ms * 1000 for ms, _ in got)
    dup = sum(1 for _, twice in got if twice)

    def pct(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1) if latencies else 0.0

    return {
        "clients": options.clients,
        "publishers": options.publishers,
        "rateAsked": options.rate,
        "rateSent": round(result["rate"], 1),
        "seconds": options.seconds,
        "published": result["sent"],
        "publishFailed": result["failed"],
        "received": len(got) - dup,
        "expected": expected,
        "lost": expected - (len(got) - dup),
        "duplicates": dup,
        "resyncs": resyncs,
        "p50Ms": pct(0.50),
        "p90Ms": pct(0.90),
        "p99Ms": pct(0.99),
        "maxMs": round(latencies[-1], 1) if latencies else 0.0,
        "meanMs": round(statistics.fmean(latencies), 1) if latencies else 0.0,
        "goalP99Ms": GOAL_P99_MS,
        "serverCpuPct": result["serverCpuPct"],
        "benchCpuPct": result["benchCpuPct"],
        "publisherCpuPct": result["publisherCpuPct"],
        "load1": round(os.getloadavg()[0], 2),
    }


def handle(options: argparse.Namespace) -> int:
    from django.conf import settings

    if not settings.REDIS_URL:
        sys.stderr.write("bench live: set REDIS_URL (the channel layer and the topic log live there)\n")
        return 2
    cookie = _session_cookie()
    figures = asyncio.run(_measure(options, cookie))
    if options.json:
        print(json.dumps(figures))
    else:
        print(f"{'figure':<16}{'value':>12}")
        for key, value in figures.items():
            print(f"{key:<16}{value:>12}")
    return 0 if figures["lost"] == 0 and figures["duplicates"] == 0 else 1
