"""One channel-layer subscription per topic per server process, fanned out to its websockets here.

With a Channels group per websocket, every event costs the channel layer one message per open
socket (20 sockets at 1,000 events a second: 20,000 Redis writes a second, and channels-redis drops
what a slow socket's channel cannot hold). Instead the process joins each topic's group once, with a
channel of its own, and hands each message to the local consumers subscribed to that topic.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from channels.layers import get_channel_layer

from gangweb.events import group_for

logger = logging.getLogger(__name__)


class Subscriber(Protocol):
    async def hub_message(self, message: dict[str, Any]) -> None: ...


class Hub:
    def __init__(self) -> None:
        self.layer = get_channel_layer()
        self.local: dict[str, set[Subscriber]] = {}
        self.readers: dict[str, asyncio.Task] = {}
        self.lock = asyncio.Lock()

    async def subscribe(self, topic: str, subscriber: Subscriber) -> None:
        async with self.lock:
            self.local.setdefault(topic, set()).add(subscriber)
            reader = self.readers.get(topic)
            if reader is None or reader.done():
                channel = await self.layer.new_channel()
                await self.layer.group_add(group_for(topic), channel)
                self.readers[topic] = asyncio.get_running_loop().create_task(
                    self._read(topic, channel), name=f"gangweb-hub-{topic}"
                )

    def unsubscribe(self, subscriber: Subscriber) -> None:
        for subscribers in self.local.values():
            subscribers.discard(subscriber)

    async def _read(self, topic: str, channel: str) -> None:
        try:
            while True:
                envelope = await self.layer.receive(channel)
                message = envelope.get("message")
                if not message:
                    continue
                for subscriber in list(self.local.get(topic, ())):
                    try:
                        await subscriber.hub_message(message)
                    except Exception:  # one broken socket must not stop the others' stream
                        logger.warning("live message not delivered to one socket", exc_info=True)
        finally:
            try:
                await self.layer.group_discard(group_for(topic), channel)
            except Exception:
                pass


_hubs: dict[asyncio.AbstractEventLoop, Hub] = {}


def hub() -> Hub:
    loop = asyncio.get_running_loop()
    for other in [lp for lp in _hubs if lp.is_closed()]:
        del _hubs[other]
    if loop not in _hubs:
        _hubs[loop] = Hub()
    return _hubs[loop]
