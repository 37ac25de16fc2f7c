"""The live stream across a Redis that restarts empty (the quickstart's Redis has no volume): a page
whose numbers the new Redis has not given out yet is told to resync, then follows again, instead of
waiting forever. A real server process, a real Redis of the test's own, a websocket client playing the
page's side of the protocol."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest
import websockets
from websockets.exceptions import WebSocketException

from gangweb import stream
from tests.conftest import migrate_and_run
from tests.gangweb.test_dashboard_server import FAST_SMALL_SIMULATION, signed_in_cookie

pytestmark = pytest.mark.timeout(180)


def served(asgi_server, redis_url: str, tmp_path, *readers: tuple[str, str]) -> tuple[str, list[str]]:
    """The dashboard on ``redis_url`` and signed-in viewers: ``(username, where)`` with ``where`` "*" for
    every namespace or one namespace; by default one viewer of every namespace. (address, their cookies)."""
    readers = readers or (("restart-viewer", "*"),)
    env = {**FAST_SMALL_SIMULATION, "GANGWEB_DEMO": "", "REDIS_URL": redis_url, "SESSION_COOKIE_SECURE": "0"}
    run_env = {**os.environ, "GANGWEB_VAR_DIR": str(tmp_path), **env}
    script = "from django.contrib.auth.models import User; from gangweb.access.grants import grant\n"
    for username, where in readers:
        scope = "all_namespaces=True" if where == "*" else f"namespaces=[{where!r}]"
        script += (
            f"u, _ = User.objects.get_or_create(username={username!r}); u.is_staff = True\n"
            "u.set_password('viewer-pw'); u.save()\n"
            f"grant({username!r}, 'viewer', {scope})\n"
        )
    migrate_and_run(run_env, script, timeout=120)
    address = asgi_server(env=env)
    return address, [signed_in_cookie(address, username, "viewer-pw") for username, _ in readers]


def publish(redis_url: str, marker: str, namespace: str = "team-a") -> int:
    """A ledger event of ``namespace`` from another process (a worker, say), through the same Redis."""
    payload = {"podGroup": f"{namespace}/train", "reason": marker}
    message = {"type": "plan.created", "topic": "ledger", "at": time.time(), "payload": payload}
    return stream.RedisLog(redis_url).append("ledger", message)


class Page:
    """The page's side of ``ws/live/`` as ``gangweb/static/dashboard/common.js`` plays it: one socket, opened again
    whenever it closes (the restart closes it); the epoch and the last number per topic held across
    reconnects and sent when subscribing; a number at or below the last is dropped as seen (a sealed
    position is held as it is); a resync
    is "fetch the data again and go on from its number". ``sends_epoch=False``: a page that holds no
    epoch (loaded before it existed), which resumes on numbers alone."""

    def __init__(self, address: str, cookie: str, topics: list[str], *, sends_epoch: bool = True) -> None:
        self.address, self.cookie, self.sends_epoch = address, cookie, sends_epoch
        self.epoch: str | None = None
        self.last: dict[str, int | None] = dict.fromkeys(topics)
        self.events: list[dict] = []
        self.resyncs: list[dict] = []
        self.subscribed: list[dict] = []
        self.connections = 0
        self.ws = None

    async def _open(self) -> None:
        self.ws = await websockets.connect(
            f"ws://{self.address}/ws/live/",
            origin=f"http://{self.address}",
            additional_headers={"Cookie": self.cookie},
        )
        self.connections += 1
        epoch = self.epoch if self.sends_epoch else None
        await self.ws.send(json.dumps({"type": "subscribe", "epoch": epoch, "topics": self.last}))

    def _take(self, message: dict) -> None:
        kind, topic = message["type"], message.get("topic")
        if kind == "subscribed":
            self.subscribed.append(message)
            self.epoch = message.get("epoch")
            for name, seq in message["topics"].items():
                if self.last.get(name) is None:
                    self.last[name] = seq
        elif kind == "resync":
            self.epoch = message.get("epoch")
            self.last[topic] = message["seq"]
            self.resyncs.append(message)
        elif topic in self.last:
            seq, last = message["seq"], self.last[topic]
            if isinstance(seq, int) and isinstance(last, int) and seq <= last:
                return  # seen already (a sealed position, a string, is only held)
            self.last[topic] = message["seq"]
            self.events.append(message)

    async def until(self, done, timeout: float = 30) -> None:
        """Follow the stream, reconnecting as the page does, until ``done(self)``."""
        deadline = time.monotonic() + timeout
        while not done(self):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not done in {timeout}s: {self.resyncs} {self.events[-3:]}")
            try:
                if self.ws is None:
                    await self._open()
                frame = json.loads(
                    await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.monotonic()))
                )
            except (TimeoutError, OSError, WebSocketException):
                self.ws = None  # closed or refused: the page tries again shortly
                await asyncio.sleep(0.5)
                continue
            for message in frame["messages"] if frame["type"] == "batch" else [frame]:
                self._take(message)

    async def close(self) -> None:
        """The page goes away (``until`` opens a socket again, as a page coming back does)."""
        if self.ws is not None:
            await self.ws.close()
            self.ws = None


def has(reason: str):
    return lambda page: any(m["payload"].get("reason") == reason for m in page.events)


@pytest.mark.parametrize("sends_epoch", [True, False], ids=["page-with-epoch", "page-without-epoch"])
def test_a_page_ahead_of_a_redis_that_came_back_empty_resyncs_and_follows_again(
    asgi_server, own_redis, tmp_path, sends_epoch
):
    address, (cookie,) = served(asgi_server, own_redis.url, tmp_path)

    async def scenario() -> Page:
        page = Page(address, cookie, ["ledger"], sends_epoch=sends_epoch)
        try:
            await page.until(lambda p: p.last["ledger"] is not None)
            for n in range(5):
                publish(own_redis.url, f"before-{n}")
            await page.until(has("before-4"))
            before = page.last["ledger"]
            own_redis.stop()
            own_redis.start()  # empty: its numbers start at 1 again, below what the page holds
            await page.until(lambda p: p.resyncs)
            assert page.resyncs[0]["seq"] < before
            marker = f"after-{time.time_ns()}"
            publish(own_redis.url, marker)
            await page.until(has(marker))
            return page
        finally:
            await page.close()

    page = asyncio.run(scenario())
    assert [m["topic"] for m in page.resyncs] == ["ledger"]
    if sends_epoch:
        assert page.resyncs[0]["epoch"] == page.epoch
