"""Password guessers beside another user: ``python manage.py bench signin``.

    python manage.py bench signin [--guessers 8] [--seconds 10] [--path /api/v1/] [--free N] [--json]

Starts gangweb's ASGI application in a uvicorn process (as deployed) on ``DATABASE_URL`` (and ``REDIS_URL`` when set), with
a reader holding a gangweb token and an account that is guessed at. It times the reader's ``GET --path``, one
after another, for ``--seconds`` alone, then for ``--seconds`` while ``--guessers`` processes, each from its own
loopback address, send wrong Basic passwords for the account as fast as they are answered (threads of one
process beside the server, so that the clients' own CPU is small). The table gives
the reader's p50/p99 in milliseconds in both phases and what the guessers got: 401 (the password was hashed,
and wrong) or 429 (refused before the hash). ``--free N`` lets N wrong passwords per account and per source
through before any wait: a large N shows the server without the back-off, for comparison.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import multiprocessing
import os
import secrets
import statistics
import subprocess
import time

from bench import at_least_one
from gangweb import webserver

HELP = "wrong passwords beside another user's API calls: the reader's p50/p99 alone and beside --guessers"
READER = "gangweb-signin-bench-reader"
TARGET = "gangweb-signin-bench-target"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--guessers", type=at_least_one, default=8, help="guessing processes (default 8)")
    parser.add_argument("--seconds", type=at_least_one, default=10, help="length of each phase (default 10)")
    parser.add_argument("--path", default="/api/v1/", help="what the reader GETs (default /api/v1/)")
    parser.add_argument(
        "--free",
        type=at_least_one,
        default=None,
        help="wrong passwords per account and per source before any wait (default: the settings')",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")


def _prepare() -> str:
    """The reader's token; the guessed-at account gets a password nobody guesses."""
    from django.contrib.auth import get_user_model

    from gangweb.access import tokens
    from gangweb.access.grants import grant

    grant(READER, "viewer", all_namespaces=True)
    grant(TARGET, "viewer", all_namespaces=True)
    target = get_user_model().objects.get(username=TARGET)
    target.set_password(secrets.token_urlsafe(24))
    target.save()
    return tokens.issue(READER)


def _start_server(port: int, free: int | None) -> subprocess.Popen:
    env = {
        **os.environ,
        "GANGWEB_DEMO": "",
        "GANGWEB_SIM_TICK_SECONDS": "0",  # no map ticker: the reader and the guessers alone
        "GANGWEB_MAP_REFRESH_SECONDS": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "ERROR",  # every 401 and 429 would be a warning line
    }
    if free is not None:
        env["GANGWEB_PASSWORD_ACCOUNT_FAILURES"] = env["GANGWEB_PASSWORD_SOURCE_FAILURES"] = str(free)
    return webserver.start(port, env)


def _read(port: int, path: str, token: str, seconds: float) -> list[float]:
    """The reader's latencies in milliseconds, one call after another for ``seconds``."""
    import httpx

    latencies = []
    with httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}
    ) as client:
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            started = time.perf_counter()
            answer = client.get(path, timeout=60)
            latencies.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200:
                raise RuntimeError(f"the reader got {answer.status_code}: {answer.text[:300]}")
    return latencies


def _guess(port: int, guessers: int, ready, stop, results) -> None:
    """The guessers: one process, a thread each on its own loopback address, sending wrong passwords
    until ``stop`` is set; their answers by status."""
    import threading

    import httpx

    counts: dict[str, int] = {}
    lock = threading.Lock()

    def guesser(source: str) -> None:
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", transport=transport, timeout=60) as client:
            while not stop.is_set():
                secret = base64.b64encode(f"{TARGET}:{secrets.token_hex(6)}".encode()).decode()
                status = str(client.get("/api/v1/", headers={"Authorization": f"Basic {secret}"}).status_code)
                with lock:
                    counts[status] = counts.get(status, 0) + 1

    threads = [threading.Thread(target=guesser, args=(f"127.0.0.{10 + n}",)) for n in range(guessers)]
    for thread in threads:
        thread.start()
    ready.set()
    for thread in threads:
        thread.join()
    results.put(counts)


def _figures(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {
        "calls": len(ordered),
        "p50Ms": round(statistics.median(ordered), 1),
        "p99Ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
    }


def measure(options: argparse.Namespace) -> dict:
    token = _prepare()
    port = webserver.free_port()
    server = _start_server(port, options.free)
    try:
        webserver.wait_listening(port, server)
        _read(port, options.path, token, 1)  # warm: imports, the first reading of the cluster
        alone = _figures(_read(port, options.path, token, options.seconds))
        spawn = multiprocessing.get_context("spawn")
        ready, stop, results = spawn.Event(), spawn.Event(), spawn.Queue()
        guessing = spawn.Process(
            target=_guess, args=(port, options.guessers, ready, stop, results), daemon=True
        )
        guessing.start()
        if not ready.wait(timeout=120):  # a spawned interpreter takes a moment
            raise RuntimeError("the guessers did not start within 120 s")
        beside = _figures(_read(port, options.path, token, options.seconds))
        stop.set()
        counts = results.get(timeout=120)
        guessing.join(timeout=30)
    finally:
        server.terminate()
        server.wait(timeout=20)
    return {
        "guessers": options.guessers,
        "seconds": options.seconds,
        "path": options.path,
        "free": options.free,
        "alone": alone,
        "beside": beside,
        "guesses": sum(counts.values()),
        "hashed401": counts.pop("401", 0),
        "refused429": counts.pop("429", 0),
        "other": counts,
        "load1": round(os.getloadavg()[0], 2),
    }


def handle(options: argparse.Namespace) -> int:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per call otherwise
    figures = measure(options)
    if options.json:
        print(json.dumps(figures))
        return 0
    print(f"{'reader':<24}{'calls':>8}{'p50 ms':>10}{'p99 ms':>10}")
    for phase in ("alone", "beside"):
        row = figures[phase]
        label = phase if phase == "alone" else f"beside {figures['guessers']} guessers"
        print(f"{label:<24}{row['calls']:>8}{row['p50Ms']:>10}{row['p99Ms']:>10}")
    print(
        f"guesses {figures['guesses']}: {figures['hashed401']} hashed (401), {figures['refused429']} refused "
        f"before the hash (429){', other ' + json.dumps(figures['other']) if figures['other'] else ''}; "
        f"load {figures['load1']}"
    )
    return 0
