"""Websocket ``ws/live/``: the one live stream. A page subscribes to the topics it shows.

Client -> server: ``{"type": "subscribe", "epoch": "9f...", "topics": {"map": 41, "ledger": null},
"backfill": {"ledger": 30}}`` (the epoch of the numbers the page holds, from its last ``subscribed`` or
``resync``, null at first; per topic the last sequence number the page applied, or null for "from now";
``backfill`` asks for the newest N of a topic subscribed from now), ``{"type": "unsubscribe", "topics":
[...]}``, ``{"type": "ping"}``.

Server -> client: every event as ``{"type", "topic", "seq", "at", "payload"}`` cut to the reader's scope
(several at once as ``{"type": "batch", "messages": [...]}``); ``{"type": "subscribed", "epoch", "topics":
{topic: seq}}``; ``{"type": "resync", "topic", "seq", "epoch"}`` when the page cannot resume the topic from
what it holds (the page fetches its data again and goes on from ``seq``): the log no longer reaches back
that far, or the numbers are of another epoch (Redis came back empty, ``stream.py``), or the page is
ahead of the log. A socket that sees the epoch change resyncs every topic it follows.

Per topic the consumer delivers in sequence order, once: a message numbered at or below the last one
delivered is a duplicate and is dropped; one that skips numbers (two publishers raced) is held until
the missing ones arrive or, after ``GAP_WAIT`` seconds, they are read from the log. Messages the reader
may not see are skipped on the server, so a page never sees another team's news; and a reader who does
not see every namespace gets, on the topics other than ``map``, sealed positions in ``seq`` (and in
``subscribed`` and ``resync``) instead of the log's numbers, whose gaps would count other teams' events
(``scoping.sealed_for``, ``stream.seal``). The page holds them as they are and sends them back.

A signed-in reader's socket also joins its session's and its user's groups (``gangweb.access.sessions``):
signing out closes it (4401), a changed role or namespaces closes it so the page reconnects with the new
scope (4403). Every ``GANGWEB_SESSION_RECHECK_SECONDS`` it re-reads its session as a backstop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from gangweb import stream
from gangweb.access import sessions
from gangweb.access.liveness import session_scope
from gangweb.access.scope import scope_for
from gangweb.clusterview import scoping
from gangweb.dashboard import live
from gangweb.dashboard.hub import Frames, hub
from gangweb.events import bind_server_loop

logger = logging.getLogger(__name__)

# Close code for "sign in first" (4000-4999 are the application's own).
CLOSE_LOGIN_REQUIRED = sessions.CLOSE_SIGNED_OUT
GAP_WAIT = 0.5
MAX_BACKFILL = 200
# Live messages go out in one frame per this many seconds at most (``{"type": "batch", "messages"}``
# when there are several): 1,000 events a second are 20 frames a socket, not 1,000. A message after a
# quiet spell leaves at once; only a busy stream waits for the next slot. Each frame is a socket write,
# the server's largest cost under a busy stream (docs/measurements.md).
FLUSH_EVERY = 0.05


class LiveConsumer(AsyncJsonWebsocketConsumer):
    # --- who is reading: the session's grant, re-read on a close message or every recheck -------

    user_id: int | None = None
    groups_joined: tuple[str, ...] = ()
    _recheck: asyncio.Task | None = None

    def visible(self, message: dict[str, Any]) -> dict[str, Any] | None:
        cut = scoping.cut_message(message, self.reader)
        if cut is not None and scoping.sealed_for(self.reader, cut.get("topic", "")):
            cut = {**cut, "seq": stream.seal(self.epoch, cut["seq"])}
        return cut

    def position(self, topic: str, seq: int) -> int | str:
        """What the page holds for the topic's number ``seq`` (sealed, or the number)."""
        return stream.seal(self.epoch, seq) if scoping.sealed_for(self.reader, topic) else seq

    def number(self, topic: str, held: Any) -> int | None:
        """The log's number a page's held position stands for; None when it stands for none of this epoch."""
        if scoping.sealed_for(self.reader, topic):
            return stream.unseal(self.epoch, held)
        return held if isinstance(held, int) and not isinstance(held, bool) and held >= 0 else None

    def encoded(self, message: dict[str, Any], frames: Frames | None = None) -> str | None:
        """``message`` as this reader may receive it, as JSON (shared with same-scoped sockets through
        the hub's ``frames``), or None."""
        return (frames or Frames()).text(message, self.cut_key, self.visible)

    # --- connection --------------------------------------------------------------------------------

    async def connect(self):
        user = self.scope.get("user")
        self.session_key = getattr(self.scope.get("session"), "session_key", None)
        if user is not None and user.is_authenticated:
            found = await database_sync_to_async(session_scope)(self.session_key)
            if found is None:
                await self.close(code=CLOSE_LOGIN_REQUIRED)
                return
            self.user_id, self.reader = found
            groups = (sessions.user_group(self.user_id), sessions.session_group(self.session_key))
        else:  # the public demo's anonymous reader, or nobody
            self.reader = await sync_to_async(scope_for)(user)
            groups = ()
        if not self.reader.authenticated:
            await self.close(code=CLOSE_LOGIN_REQUIRED)
            return
        self.epoch: str | None = None  # of the numbers in ``last``
        self.last: dict[str, int] = {}
        self.held: dict[str, dict[int, dict[str, Any]]] = {}
        self.order = asyncio.Lock()
        self.outbox: list[str] = []  # JSON texts of the messages of the next frame
        self.flushing: asyncio.TimerHandle | None = None
        self.flushed_at = 0.0  # the loop's time of the last frame sent
        self.cut_key = scoping.cut_key(self.reader)
        bind_server_loop(asyncio.get_running_loop())
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)
        self.groups_joined = groups
        await self.accept()
        if self.user_id is not None:
            self._recheck = asyncio.get_running_loop().create_task(self._recheck_session())
        live.ensure_ticker()

    async def access_close(self, message):
        """Sent by ``gangweb.access.sessions``: this socket's session ended or its scope changed."""
        await self.close(code=int(message.get("code") or CLOSE_LOGIN_REQUIRED))

    async def _recheck_session(self):
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(float(settings.GANGWEB_SESSION_RECHECK_SECONDS))
                try:
                    found = await database_sync_to_async(session_scope)(self.session_key)
                except Exception:  # the database is away: check again next turn
                    continue
                if found is None or found[0] != self.user_id:
                    await self.close(code=sessions.CLOSE_SIGNED_OUT)
                    return
                if found[1] != self.reader:
                    await self.close(code=sessions.CLOSE_SCOPE_CHANGED)
                    return

    async def disconnect(self, code):
        self.closed = True
        if self._recheck is not None:
            self._recheck.cancel()
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)
        if hasattr(self, "last"):
            hub().unsubscribe(self)
            self.last.clear()
            if self.flushing is not None:
                self.flushing.cancel()
                self.flushing = None

    @classmethod
    async def decode_json(cls, text_data):
        # Garbage from a client is ignored, not a server error that drops the socket.
        try:
            return json.loads(text_data)
        except ValueError:
            return None

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "subscribe" and isinstance(content.get("topics"), dict):
            await self._subscribe(content["topics"], content.get("backfill") or {}, content.get("epoch"))
        elif kind == "unsubscribe" and isinstance(content.get("topics"), list):
            for topic in content["topics"]:
                self.last.pop(topic, None)  # the hub still hands it over; it is no longer delivered
        elif kind == "ping":
            await self.send_json({"type": "pong"})

    async def _subscribe(self, topics: dict[str, Any], backfill: dict[str, Any], held: Any) -> None:
        answered = {}
        async with self.order:
            now = await sync_to_async(stream.epoch)()
            if self.epoch is not None and self.epoch != now:
                await self._resync_all(now)
            self.epoch = now
            for topic, position in topics.items():
                if topic not in stream.TOPICS:
                    continue
                # Join first, then read the log: whatever is sent meanwhile is either in the log or
                # arrives afterwards, and numbers already delivered are dropped as duplicates.
                await hub().subscribe(topic, self)
                if position is not None:
                    same_epoch = held is None or held == now  # a page's first subscribe holds none
                    after = self.number(topic, position) if same_epoch else None
                    missed = None if after is None else await sync_to_async(stream.since)(topic, after)
                    if missed is None:
                        await self._resync(topic)
                    else:
                        self.last[topic] = after
                        for message in missed:
                            self._deliver(topic, message)
                else:
                    self.last[topic] = await sync_to_async(stream.log().last)(topic)
                    wanted = backfill.get(topic)
                    if isinstance(wanted, int) and wanted > 0:
                        recent = await sync_to_async(stream.latest)(topic, min(wanted, MAX_BACKFILL))
                        for message in recent:
                            message["backfill"] = True
                            if (text := self.encoded(message)) is not None:
                                self.outbox.append(text)
                answered[topic] = self.position(topic, self.last[topic])
            await self._flush()
        await self.send_json({"type": "subscribed", "epoch": self.epoch, "topics": answered})

    async def _resync(self, topic: str) -> None:
        """Tell the page to fetch the topic's data again and go on from the log's last number."""
        await self._flush()  # what is queued comes before: the page applies nothing after the resync twice
        self.held.pop(topic, None)
        self.last[topic] = await sync_to_async(stream.log().last)(topic)
        seq = self.position(topic, self.last[topic])
        await self.send_json({"type": "resync", "topic": topic, "seq": seq, "epoch": self.epoch})

    async def _resync_all(self, epoch: str) -> None:
        """The numbers started again (a new epoch): every topic this socket follows is resynced."""
        self.epoch = epoch
        for topic in list(self.last):
            await self._resync(topic)

    # --- events ------------------------------------------------------------------------------------

    async def hub_messages(
        self, topic: str, epoch: str, messages: list[dict[str, Any]], frames: Frames
    ) -> None:
        """A batch of a topic this process follows (``hub.py``), in the order the layer gave it."""
        async with self.order:
            if topic not in self.last:
                return
            if epoch != self.epoch:
                await self._resync_all(epoch)
            for message in messages:
                self._take(topic, message, frames)

    async def hub_resync(self, topic: str, epoch: str) -> None:
        async with self.order:
            if topic not in self.last:
                return
            if epoch != self.epoch:
                await self._resync_all(epoch)
            else:
                await self._resync(topic)

    def _take(self, topic: str, message: dict[str, Any], frames: Frames) -> None:
        seq = message["seq"]
        if seq <= self.last[topic]:
            return
        if seq > self.last[topic] + 1:
            held = self.held.setdefault(topic, {})
            if not held:  # one timer per gap, not one per message held behind it
                asyncio.get_running_loop().call_later(
                    GAP_WAIT, lambda: asyncio.ensure_future(self._fill_gap(topic))
                )
            held[seq] = message
            return
        self._deliver(topic, message, frames)
        self._release_held(topic)

    def _deliver(self, topic: str, message: dict[str, Any], frames: Frames | None = None) -> None:
        if message["seq"] <= self.last.get(topic, 0):
            return
        self.last[topic] = message["seq"]
        text = self.encoded(message, frames)
        if text is not None:
            self.outbox.append(text)
            if self.flushing is None:
                loop = asyncio.get_running_loop()
                self.flushing = loop.call_later(
                    max(0.0, self.flushed_at + FLUSH_EVERY - loop.time()),
                    lambda: asyncio.ensure_future(self._flush_later()),
                )

    async def _flush_later(self) -> None:
        """The timer's flush: a socket that went away meanwhile is no error (it has nothing to miss)."""
        try:
            await self._flush()
        except Exception as exc:  # the client left before its disconnect reached this consumer
            self.closed = True
            logger.debug("live frame not sent: %s", type(exc).__name__)

    async def _flush(self) -> None:
        if self.flushing is not None:
            self.flushing.cancel()
            self.flushing = None
        out, self.outbox = self.outbox, []
        if getattr(self, "closed", False):
            return
        if out:
            self.flushed_at = asyncio.get_running_loop().time()
        if len(out) == 1:
            await self.send(text_data=out[0])
        elif out:
            await self.send(text_data='{"type": "batch", "messages": [' + ", ".join(out) + "]}")

    def _release_held(self, topic: str) -> None:
        held = self.held.get(topic) or {}
        while self.last[topic] + 1 in held:
            self._deliver(topic, held.pop(self.last[topic] + 1))
        for seq in [s for s in held if s <= self.last[topic]]:
            del held[seq]

    async def _fill_gap(self, topic: str) -> None:
        async with self.order:
            if not self.held.get(topic) or topic not in self.last:
                return
            missed = await sync_to_async(stream.since)(topic, self.last[topic])
            if missed is None:
                await self._resync(topic)
                return
            for message in missed:
                self._deliver(topic, message)
            self._release_held(topic)
            if self.held[topic]:  # still a gap (the log was read before they were kept): wait again
                asyncio.get_running_loop().call_later(
                    GAP_WAIT, lambda: asyncio.ensure_future(self._fill_gap(topic))
                )
            await self._flush()
