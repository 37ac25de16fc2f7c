"""One feed per topic per server process, fanned out to its websockets here.

The topic's log sends every batch it numbers and keeps on the topic's feed (``stream.feed``: Redis
pub/sub, published by the same script that numbers the batch). Each server process follows each topic
once and hands every batch to the local consumers subscribed to that topic, with one ``Frames`` shared
by all of them, so a message is cut to a scope and encoded as JSON once per scope, not once per socket.

Why not a Channels group: channels-redis receives one message per three Redis round trips, in series
(restore, pop, clean), so a loaded server fell behind at ~30 batches a second (bench live, load 8 on
2 cores: seconds of backlog with the process 80 % idle); a pub/sub subscription is pushed to. When the
feed breaks (Redis restarted), the hub follows it again and first hands over what the log kept since
the last number it saw, so no socket misses what was published meanwhile (consumers drop duplicates).
Every hand-over names the numbers' epoch (``stream.py``): after Redis came back empty it is a new one,
and a socket that sees it resyncs, as it does when the log no longer reaches back to that number.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Protocol

from asgiref.sync import sync_to_async

from gangweb import stream

logger = logging.getLogger(__name__)
RETRY_SECONDS = 1.0


class Frames:
    """The JSON text of one batch's messages as each scope may read them, made once per scope."""

    def __init__(self) -> None:
        self._texts: dict[tuple[int, str], str | None] = {}

    def text(self, message: dict[str, Any], scope_key: str, cut) -> str | None:
        """``message`` cut by ``cut`` (the reader's ``scoping.cut_message``) as JSON; None: not theirs.
        Readers with the same ``scope_key`` must get the same cut."""
        key = (id(message), scope_key)
        if key not in self._texts:
            visible = cut(message)
            self._texts[key] = None if visible is None else json.dumps(visible)
        return self._texts[key]


class Subscriber(Protocol):
    async def hub_messages(
        self, topic: str, epoch: str, messages: list[dict[str, Any]], frames: Frames
    ) -> None: ...

    async def hub_resync(self, topic: str, epoch: str) -> None:
        """What the topic published meanwhile is not in the log any more (or the epoch changed)."""


class Hub:
    def __init__(self) -> None:
        self.local: dict[str, set[Subscriber]] = {}
        self.readers: dict[str, asyncio.Task] = {}
        self.last: dict[str, tuple[str, int]] = {}  # per topic, the epoch and last number handed over
        self.lock = asyncio.Lock()

    async def subscribe(self, topic: str, subscriber: Subscriber) -> None:
        """Once this returns, every batch the topic's log appends reaches ``subscriber``."""
        async with self.lock:
            self.local.setdefault(topic, set()).add(subscriber)
            reader = self.readers.get(topic)
            if reader is None or reader.done():
                following = asyncio.get_running_loop().create_future()
                self.readers[topic] = asyncio.get_running_loop().create_task(
                    self._read(topic, following), name=f"gangweb-hub-{topic}"
                )
                await following

    def unsubscribe(self, subscriber: Subscriber) -> None:
        for subscribers in self.local.values():
            subscribers.discard(subscriber)

    async def _read(self, topic: str, following: asyncio.Future) -> None:
        while True:
            try:
                async with stream.feed(topic) as queue:
                    if not following.done():
                        following.set_result(None)
                    elif topic in self.last:  # followed again: what the log kept meanwhile first
                        await self._catch_up(topic, *self.last[topic])
                    while (batch := await queue.get()) is not None:
                        await self._hand_over(topic, *batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not following.done():
                    following.set_exception(exc)
                    return
                logger.warning("the live feed of %s broke (%s); following it again", topic, exc)
            await asyncio.sleep(RETRY_SECONDS)

    async def _catch_up(self, topic: str, epoch: str, last: int) -> None:
        """After a broken feed: what the log kept since ``last``; a resync when it lost some or Redis came
        back empty (a new epoch: what was published before is gone)."""
        now = await sync_to_async(stream.epoch)()
        missed = await sync_to_async(stream.since)(topic, last) if now == epoch else None
        if missed is None:
            self.last[topic] = (now, await sync_to_async(stream.log().last)(topic))
            for subscriber in list(self.local.get(topic, ())):
                try:
                    await subscriber.hub_resync(topic, now)
                except Exception:
                    logger.warning("live resync not delivered to one socket", exc_info=True)
        else:
            await self._hand_over(topic, now, missed)

    async def _hand_over(self, topic: str, epoch: str, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        before = self.last.get(topic)
        last = (
            messages[-1]["seq"]
            if before is None or before[0] != epoch
            else max(before[1], messages[-1]["seq"])
        )
        self.last[topic] = (epoch, last)
        frames = Frames()
        for subscriber in list(self.local.get(topic, ())):
            try:
                await subscriber.hub_messages(topic, epoch, messages, frames)
            except Exception:  # one broken socket must not stop the others' stream
                logger.warning("live message not delivered to one socket", exc_info=True)


_hubs: dict[asyncio.AbstractEventLoop, Hub] = {}


def hub() -> Hub:
    loop = asyncio.get_running_loop()
    for other in [lp for lp in _hubs if lp.is_closed()]:
        del _hubs[other]
    if loop not in _hubs:
        _hubs[loop] = Hub()
    return _hubs[loop]
