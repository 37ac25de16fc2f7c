"""Demo benchmark: how long ``manage.py demo`` takes to show a live page from a fresh clone.

    python manage.py bench demo [--runs 3] [--json]

Clones this repository's HEAD into a temporary directory, then for each run starts
``python manage.py demo`` there with an empty data directory (so it migrates from scratch) and
measures: the URL printed, the page served, the live stream's first answer (``ws/live/`` subscribed to the map). Uses this
interpreter (the installed dependencies); installing them is ``make demo``'s bootstrap, not timed here.
(Formerly ``manage.py demo_bench``, still an alias.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import websockets
from django.conf import settings
from django.core.management.base import CommandError

from bench import at_least_one

HELP = "seconds from a fresh clone to a live page: URL printed, page served, first websocket state"
EMBEDDED_DEFAULTS = {
    "DATABASE_URL": "",
    "REDIS_URL": "",
    "KUBECONFIG": "",
    "GANGWEB_DEMO": "1",
    "PYTHONUNBUFFERED": "1",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _first_state(base: str) -> None:
    address = base.removeprefix("http://")
    async with websockets.connect(f"ws://{address}/ws/live/", origin=base) as ws:
        await ws.send(json.dumps({"type": "subscribe", "topics": {"map": None}}))
        while json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] != "subscribed":
            pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=at_least_one, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def handle(options: argparse.Namespace) -> int:
    runs, as_json = options.runs, options.json
    with tempfile.TemporaryDirectory(prefix="gangweb-demo-bench-") as tmp:
        clone = Path(tmp) / "clone"
        done = subprocess.run(
            ["git", "clone", "-q", str(settings.BASE_DIR), str(clone)], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise CommandError(f"cannot clone {settings.BASE_DIR}: {done.stderr.strip()}")
        results = [_one_run(clone, Path(tmp) / f"var-{i}") for i in range(runs)]
    summary = {key: round(statistics.median(r[key] for r in results), 3) for key in results[0]}
    if as_json:
        print(json.dumps({"runs": runs, "median_seconds": summary, "each_seconds": results}))
        return 0
    print(f"manage.py demo from a fresh clone, {runs} run(s), seconds (median):")
    print(f"{'step':<28}{'median':>8}   each")
    for key in summary:
        each = "  ".join(f"{r[key]:.2f}" for r in results)
        print(f"{key:<28}{summary[key]:>8.2f}   {each}")
    return 0


def _one_run(clone: Path, var_dir: Path) -> dict[str, float]:
    port = _free_port()
    env = {**os.environ, **EMBEDDED_DEFAULTS, "GANGWEB_VAR_DIR": str(var_dir)}
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--port", str(port)],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        base = ""
        for line in proc.stdout:
            if "running: " in line:
                base = line.split("running: ", 1)[1].strip().rstrip("/")
                break
        if not base:
            raise CommandError(f"demo exited with {proc.wait()} before printing its URL")
        url_printed = time.monotonic() - started
        page = httpx.get(base + "/", timeout=30)
        if page.status_code != 200:
            raise CommandError(f"the page answered {page.status_code}")
        page_served = time.monotonic() - started
        asyncio.run(_first_state(base))
        live = time.monotonic() - started
        return {
            "url_printed": round(url_printed, 3),
            "page_served": round(page_served, 3),
            "first_live_state": round(live, 3),
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
