"""Sessions that end everywhere, through a real ASGI server (uvicorn), Redis and a real websocket client:
an open socket closes within seconds of signing out or of a role change, and carries only what its
reader may see."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from tests.gangweb.access.http import Browser, manage

pytestmark = pytest.mark.timeout(180)

CLOSE_WITHIN = 10.0  # seconds; the push takes well under one on an idle machine


async def first_message(ws) -> dict:
    """Subscribe to the ledger topic from now; the server's answer."""
    await ws.send(json.dumps({"type": "subscribe", "topics": {"ledger": None}}))
    return json.loads(await asyncio.wait_for(ws.recv(), 20))


async def close_code(ws, timeout: float) -> int | None:
    """Read (and drop) messages until the server closes the socket; its close code (None: still open)."""
    deadline = time.monotonic() + timeout
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            await asyncio.wait_for(ws.recv(), remaining)
    except websockets.exceptions.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None
    except TimeoutError:
        return None
    return None


def test_signing_out_closes_the_open_tab_within_seconds(server):
    address, _ = server()
    browser = Browser(address)
    browser.sign_in("vera", "vera-password-1")

    async def scenario():
        async with browser.socket() as ws:
            assert (await first_message(ws))["type"] == "subscribed"
            await asyncio.to_thread(browser.sign_out)
            signed_out = time.monotonic()
            code = await close_code(ws, CLOSE_WITHIN)
            return code, time.monotonic() - signed_out

    code, took = asyncio.run(scenario())
    assert code == 4401, f"the socket was not closed as signed out within {CLOSE_WITHIN}s (code {code})"
    assert took < CLOSE_WITHIN

    async def reconnect():
        async with browser.socket():
            pass

    with pytest.raises(websockets.exceptions.InvalidStatus, match="403"):
        asyncio.run(reconnect())  # the old cookie opens nothing any more


def test_a_role_change_closes_the_socket_and_the_reconnect_has_the_new_scope(server, broker):
    address, run_env = server()
    browser = Browser(address)
    browser.sign_in("vera", "vera-password-1")

    async def scenario():
        async with browser.socket() as ws:
            await first_message(ws)
            await asyncio.to_thread(
                manage,
                run_env,
                "access",
                "grant",
                "vera",
                "--role",
                "operator",
                "--namespaces",
                "team-a,team-b",
            )
            changed = time.monotonic()
            return await close_code(ws, CLOSE_WITHIN), time.monotonic() - changed

    code, took = asyncio.run(scenario())
    assert code == 4403 and took < CLOSE_WITHIN, (code, took)

    async def scoped_stream():
        async with browser.socket() as ws:
            await first_message(ws)
            marker = f"m-{time.time_ns()}"
            # Published the way the pipeline does (gangweb.events.send), by a process of the server's own.
            script = (
                "from gangweb.events import send\n"
                f"for pg in ('team-c/hidden', 'team-b/shown', 'team-a/shown'):\n"
                f"    send('request.opened', {{'podGroup': pg, 'reason': '{marker}'}})\n"
                f"send('plan.created', {{'reason': '{marker}'}})\n"
            )
            await asyncio.to_thread(manage, run_env, "shell", "-c", script)
            seen: list[str] = []
            deadline = time.monotonic() + 15
            while len(seen) < 2 and time.monotonic() < deadline:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
                for message in frame.get("messages", [frame]):
                    if (message.get("payload") or {}).get("reason") == marker:
                        seen.append(message["payload"].get("podGroup", "(no namespace)"))
            # anything else for the marker would have come in the same order, before team-a's
            return seen

    # team-c is not hers, and an event naming no namespace is a cluster aggregate: neither arrives.
    assert asyncio.run(scoped_stream()) == ["team-b/shown", "team-a/shown"]


def test_a_session_ended_without_a_message_is_caught_by_the_periodic_recheck(server):
    address, run_env = server(GANGWEB_SESSION_RECHECK_SECONDS="1")
    browser = Browser(address)
    browser.sign_in("vera", "vera-password-1")

    async def scenario():
        async with browser.socket() as ws:
            await first_message(ws)
            # Sessions deleted behind the server's back (no sign-out, no message): only the re-check sees it.
            await asyncio.to_thread(
                manage,
                run_env,
                "shell",
                "-c",
                "from django.contrib.sessions.models import Session; Session.objects.all().delete()",
            )
            return await close_code(ws, CLOSE_WITHIN)

    assert asyncio.run(scenario()) == 4401
