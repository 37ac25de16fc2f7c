"""The dashboard's websocket stream through a real ASGI server process and a real websocket client."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime

import httpx
import pytest
import websockets

from gangweb.events import DASHBOARD_GROUP, MESSAGE_TYPE
from tests.conftest import ROOT
from tests.gangweb.conftest import EMBEDDED_DEFAULTS

FAST_SMALL_SIMULATION = {**EMBEDDED_DEFAULTS, "GANGWEB_SIM_NODES": "16", "GANGWEB_SIM_TICK_SECONDS": "0.3"}


async def next_state(ws, timeout: float = 10) -> dict:
    """The next ``cluster.state`` payload, skipping other dashboard events."""
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        message = json.loads(await asyncio.wait_for(ws.recv(), remaining))
        if message["event"] == "cluster.state":
            return message["payload"]
    raise TimeoutError(f"no cluster.state in {timeout}s")


def clock(state: dict) -> datetime:
    """The simulated cluster's time (RFC 3339, whole seconds: ticks within one second share it)."""
    return datetime.fromisoformat(state["time"].replace("Z", "+00:00"))


async def watch_until_the_clock_moves(address: str, updates: int, timeout: float = 60) -> list[dict]:
    """The picture on connect, then at least ``updates`` ticks and as many more as it takes for the
    simulated clock to show a later second. Ticks come every 0.3 s but the clock reads whole seconds,
    so any fixed number of ticks may all fall within the second the picture showed."""
    deadline = time.monotonic() + timeout
    async with websockets.connect(f"ws://{address}/ws/cluster/", origin=f"http://{address}") as ws:
        states = [await next_state(ws)]
        while len(states) <= updates or clock(states[-1]) == clock(states[0]):
            states.append(await next_state(ws, timeout=deadline - time.monotonic()))
        return states


def test_daphne_streams_the_picture_then_live_updates(asgi_server):
    address = asgi_server(env=FAST_SMALL_SIMULATION)
    page = httpx.get(f"http://{address}/", timeout=10)
    assert page.status_code == 200 and 'id="initial-state"' in page.text
    assert httpx.get(f"http://{address}/static/dashboard/cluster.js", timeout=10).status_code == 200

    states = asyncio.run(watch_until_the_clock_moves(address, updates=3))
    first = states[0]
    assert sum(len(rack["nodes"]) for rack in first["racks"]) == 16
    assert "changes" not in first  # the picture on connect is the whole state, not a tick
    ticks = [s["tick"] for s in states[1:]]
    assert ticks == sorted(set(ticks)) and ticks[0] > first["tick"]
    assert all("changes" in s for s in states[1:])
    times = [clock(s) for s in states]
    assert times == sorted(times) and times[-1] > times[0]  # the simulated clock moves, never back


def test_a_foreign_origin_cannot_open_the_stream(asgi_server):
    address = asgi_server(env=FAST_SMALL_SIMULATION)

    async def attempt():
        async with websockets.connect(f"ws://{address}/ws/cluster/", origin="http://evil.example"):
            pass

    with pytest.raises(websockets.exceptions.InvalidStatus):
        asyncio.run(attempt())


def signed_in_cookie(address: str, username: str, password: str) -> str:
    """Sign in through the admin's login form, as a browser does; the ``Cookie`` header it then sends."""
    with httpx.Client(base_url=f"http://{address}", timeout=30, follow_redirects=True) as client:
        form = client.get("/admin/login/?next=/admin/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        landed = client.post(
            "/admin/login/?next=/admin/",
            data={
                "csrfmiddlewaretoken": token,
                "username": username,
                "password": password,
                "next": "/admin/",
            },
        )
        assert landed.url.path == "/admin/", landed.text[-2000:]
        return "; ".join(f"{name}={value}" for name, value in client.cookies.items())


def test_with_redis_events_from_another_process_reach_the_browser(asgi_server, redis_url, tmp_path):
    """With Redis the server is no demo: the stream needs a signed-in user, then carries every process's events."""
    from channels_redis.core import RedisChannelLayer

    # Not the demo (REDIS_URL is set), so no anonymous reads: a user in the server's own database.
    env = {**FAST_SMALL_SIMULATION, "GANGWEB_DEMO": "", "REDIS_URL": redis_url, "SESSION_COOKIE_SECURE": "0"}
    run_env = {**os.environ, "GANGWEB_VAR_DIR": str(tmp_path), **env}
    for command in (
        ["migrate", "--verbosity", "0"],
        [
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            "User.objects.create_user('viewer', password='viewer-pw', is_staff=True); "
            "from gangweb.access.grants import grant; grant('viewer', 'viewer', all_namespaces=True)",
        ],
    ):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    address = asgi_server(env=env)

    async def anonymous():
        async with websockets.connect(f"ws://{address}/ws/cluster/", origin=f"http://{address}"):
            pass

    with pytest.raises(websockets.exceptions.InvalidStatus):
        asyncio.run(anonymous())
    cookie = signed_in_cookie(address, "viewer", "viewer-pw")

    async def scenario():
        async with websockets.connect(
            f"ws://{address}/ws/cluster/", origin=f"http://{address}", additional_headers={"Cookie": cookie}
        ) as ws:
            first = await next_state(ws)
            update = await next_state(ws)  # the server's own ticker publishing through Redis
            assert update["tick"] > first["tick"]
            # Another process (a Celery worker, say) publishes to the same group through Redis.
            layer = RedisChannelLayer(hosts=[redis_url])
            marker = f"from-test-{time.time_ns()}"
            await layer.group_send(
                DASHBOARD_GROUP,
                {
                    "type": MESSAGE_TYPE,
                    "event": "plan.created",
                    "at": time.time(),
                    "payload": {"reason": marker},
                },
            )
            try:
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    if message["event"] == "plan.created" and message["payload"].get("reason") == marker:
                        return True
                return False
            finally:
                await layer.close_pools()

    assert asyncio.run(scenario())
