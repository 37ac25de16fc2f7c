"""The dashboard's websocket stream through a real ASGI server process and a real websocket client."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time

import httpx
import pytest
import websockets

from tests.conftest import migrate_and_run
from tests.gangweb.conftest import EMBEDDED_DEFAULTS

FAST_SMALL_SIMULATION = {**EMBEDDED_DEFAULTS, "GANGWEB_SIM_NODES": "16", "GANGWEB_SIM_TICK_SECONDS": "0.3"}


async def next_of(ws, kind: str, timeout: float = 10) -> dict:
    """The next message of type ``kind``, skipping others."""
    deadline = time.monotonic() + timeout
    early = ws.__dict__.setdefault("early", [])
    while (remaining := deadline - time.monotonic()) > 0:
        while early:
            if (message := early.pop(0))["type"] == kind:
                return message
        frame = json.loads(await asyncio.wait_for(ws.recv(), remaining))
        early.extend(frame["messages"] if frame["type"] == "batch" else [frame])
    raise TimeoutError(f"no {kind} in {timeout}s")


async def map_deltas(address: str, count: int, headers: dict | None = None) -> tuple[dict, list[dict]]:
    """The picture over HTTP, then ``count`` live map deltas that follow it."""
    picture = httpx.get(f"http://{address}/api/v1/map/", headers=headers or {}, timeout=10).json()
    async with websockets.connect(
        f"ws://{address}/ws/live/", origin=f"http://{address}", additional_headers=headers or {}
    ) as ws:
        await ws.send(json.dumps({"type": "subscribe", "topics": {"map": picture["seq"]}}))
        deltas = [await next_of(ws, "map.delta") for _ in range(count)]
    return picture, deltas


def test_the_server_serves_the_picture_then_live_deltas(asgi_server):
    address = asgi_server(env=FAST_SMALL_SIMULATION)
    page = httpx.get(f"http://{address}/", timeout=10)
    assert page.status_code == 200 and 'id="gpu-map"' in page.text
    scripts = re.findall(r'<script src="/static/([^"]+)"', page.text)
    assert {"dashboard/map.js", "dashboard/map-geometry.js", "dashboard/common.js"} <= set(scripts)
    for asset in scripts:
        assert httpx.get(f"http://{address}/static/{asset}", timeout=10).status_code == 200, asset

    picture, deltas = asyncio.run(map_deltas(address, 3))
    assert len(picture["nodes"]) == 16
    seqs = [d["seq"] for d in deltas]
    # Resumed from the picture's number: nothing skipped between it and the first delta, none twice.
    assert seqs[0] <= picture["seq"] + 2 and seqs == sorted(set(seqs))
    times = [d["payload"]["time"] for d in deltas]
    assert times == sorted(times)


def test_a_foreign_origin_cannot_open_the_stream(asgi_server):
    address = asgi_server(env=FAST_SMALL_SIMULATION)

    async def attempt():
        async with websockets.connect(f"ws://{address}/ws/live/", origin="http://evil.example"):
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

    # Not the demo (REDIS_URL is set), so no anonymous reads: a user in the server's own database.
    env = {**FAST_SMALL_SIMULATION, "GANGWEB_DEMO": "", "REDIS_URL": redis_url, "SESSION_COOKIE_SECURE": "0"}
    run_env = {**os.environ, "GANGWEB_VAR_DIR": str(tmp_path), **env}
    migrate_and_run(
        run_env,
        "from django.contrib.auth.models import User; "
        "User.objects.create_user('viewer', password='viewer-pw', is_staff=True); "
        "from gangweb.access.grants import grant; grant('viewer', 'viewer', all_namespaces=True)",
        timeout=120,
    )
    address = asgi_server(env=env)

    async def anonymous():
        async with websockets.connect(f"ws://{address}/ws/live/", origin=f"http://{address}"):
            pass

    with pytest.raises(websockets.exceptions.InvalidStatus):
        asyncio.run(anonymous())
    cookie = signed_in_cookie(address, "viewer", "viewer-pw")

    async def scenario():
        async with websockets.connect(
            f"ws://{address}/ws/live/", origin=f"http://{address}", additional_headers={"Cookie": cookie}
        ) as ws:
            await ws.send(json.dumps({"type": "subscribe", "topics": {"map": None, "ledger": None}}))
            await next_of(ws, "subscribed")
            await next_of(ws, "map.delta")  # the server's own ticker publishing through Redis
            # Another process (a Celery worker, say) publishes through the same Redis, numbered in its topic.
            from gangweb import stream

            marker = f"from-test-{time.time_ns()}"
            message = {
                "type": "plan.created",
                "topic": "ledger",
                "at": time.time(),
                "payload": {"reason": marker},
            }
            seq = stream.RedisLog(redis_url).append("ledger", message)
            got = await next_of(ws, "plan.created")
            return got["payload"]["reason"] == marker and got["seq"] == seq

    assert asyncio.run(scenario())
