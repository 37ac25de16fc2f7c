"""GPU map benchmark: the overview's first paint and update cost in Chromium.

    python manage.py bench map [--server real|synthetic] [--nodes 5000,20000] [--gpus 8] [--runs 3]
                               [--seconds 20] [--json]

``--server real`` (the default): for each size the demo serves a simulated cluster of that many nodes
(``GANGWEB_SIM_NODES``; its ASGI server, its ``map/``, gzipped as the browser asks, its ticker publishing
``map.delta`` every ``GANGWEB_SIM_TICK_SECONDS``) and Debian's Chromium opens the overview, ``--runs``
times: first paint (navigation start to the ``map-first-paint`` mark: the whole map drawn), the part of it
in the window drawn (``map-first-screen``), the bytes ``map/`` took on the wire
and decoded (Resource Timing), then for ``--seconds`` the live deltas the page applies and every long task
(over 50 ms, the Long Tasks API) meanwhile, from a second after first paint on. Before the runs, the
server's first ``map/`` is timed (``coldMapS``: its first reading and picture), and one overview is kept open
meanwhile, so its ticker keeps the picture fresh as a dashboard in use does.

``--server synthetic``: the demo (a small simulated cluster, no ticker) opens its overview in Debian's
Chromium (Playwright); the picture the page fetches is answered with a synthetic one of ``--nodes`` nodes x
``--gpus`` GPUs, 85 % held by gangs of 1 to 8 nodes, in racks of 8. Measured with the page's own
performance timings (Playwright's waits evaluate strings, which the pages' Content-Security-Policy forbids,
so the bench's pages do not enforce it): first paint (navigation start to the ``map-first-paint`` mark: fetch, parse,
layout, draw), a full redraw (what hovering a gang costs), and 50 live deltas of 40 changed nodes
each, 10 a second: draw time per delta and frames longer than 50 ms meanwhile (dropped frames).
Goal: first paint <= 1 s at 5,000 nodes, no long frame during updates.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import at_least_one

HELP = "the overview's GPU map in Chromium: first paint and update cost at 1,000/5,000 nodes"
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[1]
GOAL_FIRST_PAINT_MS = 1000

UPDATES = """async () => {
  const m = window.gangwebMap;
  const keys = m.gangs.filter((g) => !g.other).map((g) => g.key);
  let seed = 7;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const draws = [];
  const gaps = [];
  let last = performance.now();
  let running = true;
  const frame = (t) => { gaps.push(t - last); last = t; if (running) requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
  for (let d = 0; d < 50; d++) {
    const nodes = [];
    for (let k = 0; k < 40; k++) {
      const i = rnd(m.nodes.length);
      const owners = Array.from({ length: m.start[i + 1] - m.start[i] }, () => (rnd(4) ? keys[rnd(keys.length)] : null));
      nodes.push([i, owners, null, false, true]);
    }
    const t0 = performance.now();
    m.applyDelta({ nodes, gangs: [], gone: [] });
    await new Promise((r) => requestAnimationFrame(() => r()));
    draws.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 100));
  }
  running = false;
  const full = [];
  for (let k = 0; k < 10; k++) { const t0 = performance.now(); m.drawAllNow(); full.push(performance.now() - t0); }
  return { draws, gaps: gaps.slice(1), full };
}"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        choices=("real", "synthetic"),
        default="real",
        help="real: the demo serves a simulated cluster of each size; synthetic: a picture answered in the browser",
    )
    parser.add_argument(
        "--nodes", default="5000,20000", help="node counts, comma-separated (default 5000,20000)"
    )
    parser.add_argument(
        "--seconds", type=at_least_one, default=20, help="real: how long to watch live updates (default 20)"
    )
    parser.add_argument("--gpus", type=at_least_one, default=8, help="GPUs per node (default 8)")
    parser.add_argument("--runs", type=at_least_one, default=3, help="page loads per size (default 3)")
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")


def synthetic_picture(nodes: int, gpus: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    namespaces = ["team-llm", "team-vision", "team-speech", "team-recsys", "research"]
    classes = [
        ("inference-critical", 1_000_000),
        ("training-high", 100_000),
        ("training-standard", 10_000),
        ("batch-low", 1_000),
    ]
    gangs, rows = [], []
    i = 0
    while i < nodes:
        span = rng.choice([1, 1, 2, 4, 8])
        tier = rng.randrange(len(classes))
        key = f"{rng.choice(namespaces)}/job-{len(gangs):05d}"
        gangs.append(
            {
                "key": key,
                "namespace": key.split("/")[0],
                "name": key.split("/")[1],
                "priorityClass": classes[tier][0],
                "priority": classes[tier][1],
                "tier": tier,
                "shade": len(gangs) % 6,
                "disruption": "all",
                "topology": False,
                "pods": span,
                "placed": span,
                "minCount": span,
                "podGpus": gpus,
                "gpus": span * gpus,
                "state": "running",
                "waitingSeconds": 0,
            }
        )
        for _ in range(span):
            if i >= nodes:
                break
            held = gpus if rng.random() < 0.85 else rng.randrange(gpus)
            rows.append(
                {
                    "name": f"gpu-r{i // 8}-n{i % 8:02d}",
                    "domain": i // 8,
                    "ready": True,
                    "cordoned": rng.random() < 0.01,
                    "gpus": [len(gangs) - 1] * held + [None] * (gpus - held),
                }
            )
            i += 1
    domains = [
        {"name": f"rack-{d}", "zone": "", "first": d * 8, "count": min(8, nodes - d * 8)}
        for d in range((nodes + 7) // 8)
    ]
    return {
        "cluster": "synthetic",
        "time": time.time(),
        "domains": domains,
        "nodes": rows,
        "gangs": gangs,
        "tiers": [{"priorityClass": c, "priority": v, "allocatedGpus": 0} for c, v in classes],
        "totals": {},
        "seq": 0,
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_demo(
    tmp: Path, extra: dict[str, str] | None = None, wait: float = 120
) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": "",
        "REDIS_URL": "",
        "KUBECONFIG": "",
        "GANGWEB_DEMO": "1",
        "GANGWEB_CLUSTER": "simulated",
        "GANGWEB_SIM_NODES": "16",
        "GANGWEB_SIM_TICK_SECONDS": "0",
        "GANGWEB_VAR_DIR": str(tmp),
        "PYTHONUNBUFFERED": "1",
        **(extra or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            raise RuntimeError("the demo exited before it was up")
        if match := re.search(r"running: (http://\S+?)/?$", line.strip()):
            return proc, match.group(1)
    raise RuntimeError(f"the demo did not start in {wait:.0f} s")


# Before any script of the page: every long task (over 50 ms) the page has, with its start.
LONG_TASKS = """
window.benchLongTasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.benchLongTasks.push([e.startTime, e.duration]);
}).observe({ type: "longtask", buffered: true });
"""


def _get(url: str) -> int:
    """GET ``url`` as a browser would (gzip accepted); the bytes on the wire."""
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return len(answer.read())


def measure_real(nodes: int, runs: int, seconds: int, tick: float) -> dict:
    """The demo serving ``nodes`` simulated nodes, the overview opened ``runs`` times (see the module)."""
    import tempfile

    from playwright.sync_api import sync_playwright

    paints, screens, wire, decoded, updates, during, loading = [], [], [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        extra = {
            "GANGWEB_SIM_NODES": str(nodes),
            "GANGWEB_SIM_TICK_SECONDS": str(tick),
            "GANGWEB_DEMO_SCENE_SECONDS": "0",
        }
        proc, base = _start_demo(Path(tmp), extra, wait=900)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                try:
                    # The server's first picture (a cold start: read and drawn once), then a page kept
                    # open, as a dashboard is, so its ticker keeps the picture fresh while pages load.
                    started = time.perf_counter()
                    cold = _get(base + "/api/v1/map/")
                    cold_s = time.perf_counter() - started
                    keeper = browser.new_page(viewport={"width": 1600, "height": 1000}, bypass_csp=True)
                    keeper.goto(base + "/")
                    keeper.wait_for_function(
                        "performance.getEntriesByName('map-first-paint').length > 0", timeout=300_000
                    )
                    for _ in range(runs):
                        page = browser.new_page(viewport={"width": 1600, "height": 1000}, bypass_csp=True)
                        page.add_init_script(LONG_TASKS)
                        page.goto(base + "/")
                        page.wait_for_function(
                            "performance.getEntriesByName('map-first-paint').length > 0", timeout=300_000
                        )
                        paint = page.evaluate("performance.getEntriesByName('map-first-paint')[0].startTime")
                        paints.append(paint)
                        screens.append(
                            page.evaluate(
                                "(performance.getEntriesByName('map-first-screen')[0] || {startTime: null}).startTime"
                            )
                        )
                        sizes = page.evaluate(
                            "performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/map/'))"
                            ".map((e) => [e.encodedBodySize, e.decodedBodySize])[0] || [0, 0]"
                        )
                        wire.append(sizes[0])
                        decoded.append(sizes[1])
                        before = page.evaluate("window.gangwebUpdates")
                        page.wait_for_timeout(seconds * 1000)
                        updates.append(page.evaluate("window.gangwebUpdates") - before)
                        tasks = page.evaluate("window.benchLongTasks")
                        during += [d for start, d in tasks if start > paint + 1000]
                        loading += [d for start, d in tasks if start <= paint + 1000]
                        page.close()
                finally:
                    browser.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return {
        "nodes": nodes,
        "gpus": nodes * 8,
        "coldMapS": round(cold_s, 1),
        "coldMapKiBWire": round(cold / 1024),
        "mapKiBWire": round(statistics.median(wire) / 1024),
        "mapKiB": round(statistics.median(decoded) / 1024),
        "firstPaintMs": round(statistics.median(paints), 1),
        "firstPaintEachMs": [round(x, 1) for x in paints],
        "firstScreenMs": round(statistics.median(screens), 1) if None not in screens else None,
        "updates": sum(updates),
        "longTasksDuringUpdates": len(during),
        "longestDuringUpdatesMs": round(max(during, default=0), 1),
        "longestWhileLoadingMs": round(max(loading, default=0), 1),
    }


def measure(base: str, nodes: int, gpus: int, runs: int) -> dict:
    from playwright.sync_api import sync_playwright

    body = json.dumps(synthetic_picture(nodes, gpus))
    paints, draws, gaps, full = [], [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for run in range(runs):
                page = browser.new_page(viewport={"width": 1600, "height": 1000}, bypass_csp=True)
                page.route(
                    "**/api/v1/map/",
                    lambda route: route.fulfill(body=body, content_type="application/json"),
                )
                page.goto(base + "/")
                page.wait_for_function(
                    "performance.getEntriesByName('map-first-paint').length > 0", timeout=60_000
                )
                paints.append(page.evaluate("performance.getEntriesByName('map-first-paint')[0].startTime"))
                if run == 0:
                    result = page.evaluate(UPDATES)
                    draws, gaps, full = result["draws"], result["gaps"], result["full"]
                page.close()
        finally:
            browser.close()

    def p(values: list[float], q: float) -> float:
        values = sorted(values)
        return round(values[min(len(values) - 1, int(q * len(values)))], 1)

    return {
        "nodes": nodes,
        "gpus": nodes * gpus,
        "pictureKiB": round(len(body) / 1024),
        "firstPaintMs": round(statistics.median(paints), 1),
        "firstPaintEachMs": [round(x, 1) for x in paints],
        "fullRedrawMs": round(statistics.median(full), 1),
        "deltaDrawP50Ms": p(draws, 0.5),
        "deltaDrawP99Ms": p(draws, 0.99),
        "framesOver50Ms": sum(1 for g in gaps if g > 50),
        "frames": len(gaps),
    }


def handle(options: argparse.Namespace) -> int:
    import tempfile

    if not Path(CHROMIUM).exists():
        sys.stderr.write(f"bench map: no Chromium at {CHROMIUM}\n")
        return 2
    try:
        sizes = [int(x) for x in options.nodes.split(",") if x.strip()]
    except ValueError:
        sys.stderr.write(f"bench map: --nodes must be whole numbers, got {options.nodes!r}\n")
        return 2
    if options.server == "real":
        rows = [measure_real(n, options.runs, options.seconds, tick=2.0) for n in sizes]
        keys = [
            "nodes",
            "coldMapS",
            "mapKiBWire",
            "mapKiB",
            "firstPaintMs",
            "firstScreenMs",
            "updates",
            "longTasksDuringUpdates",
            "longestDuringUpdatesMs",
            "longestWhileLoadingMs",
        ]
        if options.json:
            print(json.dumps({"server": "real", "results": rows, "goalFirstPaintMs": GOAL_FIRST_PAINT_MS}))
            return 0
        print("".join(f"{k:>24}" for k in keys))
        for row in rows:
            print("".join(f"{row[k]:>24}" for k in keys))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = _start_demo(Path(tmp))
        try:
            rows = [measure(base, n, options.gpus, options.runs) for n in sizes]
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    if options.json:
        print(json.dumps({"results": rows, "goalFirstPaintMs": GOAL_FIRST_PAINT_MS}))
        return 0
    keys = [
        "nodes",
        "gpus",
        "pictureKiB",
        "firstPaintMs",
        "fullRedrawMs",
        "deltaDrawP50Ms",
        "deltaDrawP99Ms",
        "framesOver50Ms",
        "frames",
    ]
    print("".join(f"{k:>15}" for k in keys))
    for row in rows:
        print("".join(f"{row[k]:>15}" for k in keys))
    return 0
