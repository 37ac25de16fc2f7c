"""The live stream's topics: every event gets a sequence number in its topic and is kept a while.

A browser subscribes to the topics its page shows and remembers the last sequence number it applied
per topic. After a reconnect it asks for what came after; the server answers from this log, or, when
the log no longer reaches back that far, tells it to resync (fetch the page's data again). The log is
a bounded Redis list per topic (``REDIS_URL``; every process shares it) or, without Redis (the
one-process demo), a deque in this process. Numbers are assigned with the append, atomically, and the
same step sends the batch on the topic's feed (Redis pub/sub; in one process, the followers' queues),
which each server process follows once (``hub.py``).

The numbers belong to an epoch: a random id kept beside the counters and made again when it is
missing, so a Redis that restarts empty (and counts from 1 again) starts a new epoch. A reader that
resumes from another epoch, or from a number the log has not reached, is told to resync instead of
waiting for numbers that were already given out.

The same log backfills a page on load (the activity feed, the admission decisions).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import secrets
import threading
from collections import deque
from collections.abc import AsyncIterator
from functools import lru_cache
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from django.conf import settings
from django.utils.crypto import salted_hmac

from scheduler import redisclient

# Topics and the event types that go to each (an unknown type goes to "activity").
TOPICS = {
    "map": ("map.delta", "map.reset"),
    "ledger": (
        "request.opened",
        "plan.created",
        "eviction",
        "gang.placed",
        "request.failed",
        "request.finished",
        "observed.preemption",
        "podgroup.created",
        "request.approved",
        "request.rejected",
        "request.cancelled",
        "notice.given",
        "notice.withdrawn",
    ),
    "decisions": ("admission.decisions",),
    "activity": (),
}
TOPIC_OF = {event: topic for topic, events in TOPICS.items() for event in events}
KEEP = {"map": 300, "ledger": 2000, "decisions": 500, "activity": 500}
PREFIX = "gangweb:live:"

# KEYS[1] and ARGV[1]: the epoch's key and a new epoch, set when the key is missing. Then per topic (KEYS:
# its number's key, its list's key, its feed's channel; ARGV: its bound, its count, then that many bodies):
# raise the number by the count, append "<seq> <json>" for each, trim to the bound and PUBLISH "<epoch>
# <first seq> [<json>, ...]" on the feed; returns the epoch, then the first numbers. One round trip for a
# whole batch of events, whatever its topics: numbered, kept and sent together (gangweb.events batches them).
_EPOCH = """
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  epoch = ARGV[1]
  redis.call('SET', KEYS[1], epoch)
end
"""
_APPEND = (
    _EPOCH
    + """
local firsts, a = {epoch}, 2
for k = 2, #KEYS, 3 do
  local keep, n = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local first = redis.call('INCRBY', KEYS[k], n) - n + 1
  local items, bodies = {}, {}
  for j = 0, n - 1 do
    bodies[j + 1] = ARGV[a + 2 + j]
    items[j + 1] = (first + j) .. ' ' .. bodies[j + 1]
  end
  redis.call('RPUSH', KEYS[k + 1], unpack(items))
  redis.call('LTRIM', KEYS[k + 1], -keep, -1)
  redis.call('PUBLISH', KEYS[k + 2], epoch .. ' ' .. first .. ' [' .. table.concat(bodies, ',') .. ']')
  firsts[#firsts + 1] = first
  a = a + 2 + n
end
return firsts
"""
)
EPOCH_KEY = PREFIX + "epoch"
# Lua's unpack() is bounded by its C stack (~8,000 values): gangweb.events sends at most this many at once.
MAX_BATCH = 500


def topic_of(event_type: str) -> str:
    return TOPIC_OF.get(event_type, "activity")


def _numbered(first: int, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "seq": first + i} for i, m in enumerate(messages)]


def new_epoch() -> str:
    return secrets.token_hex(8)


class MemoryLog:
    """The one-process log: its feed hands each batch to the followers' loops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = new_epoch()  # the process's life: its numbers start at 1 with it
        self._seq: dict[str, int] = {}
        self._items: dict[str, deque[tuple[int, str]]] = {}
        self._followers: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Queue]]] = {}

    def append_many(self, batches: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
        firsts = {}
        with self._lock:
            for topic, messages in batches.items():
                first = self._seq.get(topic, 0) + 1
                self._seq[topic] = first + len(messages) - 1
                items = self._items.setdefault(topic, deque(maxlen=KEEP.get(topic, 500)))
                items.extend((first + i, json.dumps(m)) for i, m in enumerate(messages))
                firsts[topic] = first
                for loop, queue in self._followers.get(topic, ()):
                    with contextlib.suppress(RuntimeError):  # that loop is closed: its follower is gone
                        loop.call_soon_threadsafe(queue.put_nowait, (self._epoch, _numbered(first, messages)))
        return firsts

    @contextlib.asynccontextmanager
    async def feed(self, topic: str) -> AsyncIterator[asyncio.Queue]:
        follower = (asyncio.get_running_loop(), asyncio.Queue())
        with self._lock:
            self._followers.setdefault(topic, set()).add(follower)
        try:
            yield follower[1]
        finally:
            with self._lock:
                self._followers[topic].discard(follower)

    def append(self, topic: str, message: dict[str, Any]) -> int:
        return self.append_many({topic: [message]})[topic]

    def last(self, topic: str) -> int:
        return self._seq.get(topic, 0)

    def epoch(self) -> str:
        return self._epoch

    def entries(self, topic: str) -> list[tuple[int, str]]:
        with self._lock:
            return list(self._items.get(topic, ()))


class RedisLog:
    def __init__(self, url: str) -> None:
        self._url = url
        self._redis = redisclient.shared(url, timeout=5)
        self._append = redisclient.shared_script(url, _APPEND, timeout=5)
        self._epoch = redisclient.shared_script(url, _EPOCH + "return epoch", timeout=5)

    def append_many(self, batches: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
        """Each topic's messages numbered consecutively and kept, in one round trip; each topic's first
        number. The script assigns the numbers; the stored text starts with one (a body's "seq" is not read)."""
        keys: list[str] = [EPOCH_KEY]
        args: list[Any] = [new_epoch()]
        for topic, messages in batches.items():
            keys += [PREFIX + topic + ":seq", PREFIX + topic, PREFIX + topic + ":feed"]
            args += [KEEP.get(topic, 500), len(messages), *(json.dumps(m) for m in messages)]
        _, *firsts = self._append(keys=keys, args=args)
        return {topic: int(first) for topic, first in zip(batches, firsts, strict=True)}

    def append(self, topic: str, message: dict[str, Any]) -> int:
        return self.append_many({topic: [message]})[topic]

    def last(self, topic: str) -> int:
        return int(self._redis.get(PREFIX + topic + ":seq") or 0)

    def epoch(self) -> str:
        """The numbers' epoch, made now when Redis has none (it came back empty)."""
        return self._epoch(keys=[EPOCH_KEY], args=[new_epoch()]).decode()

    @contextlib.asynccontextmanager
    async def feed(self, topic: str) -> AsyncIterator[asyncio.Queue]:
        """A queue of the topic's batches as published, ``(epoch, messages)``, from the moment this is
        entered (subscribed and confirmed by Redis); a lost connection ends the feed (``None``)."""
        client = redisclient.connect_async(self._url, timeout=None, connect_timeout=5)
        pubsub = client.pubsub()
        queue: asyncio.Queue = asyncio.Queue()

        async def pump() -> None:
            try:
                async for item in pubsub.listen():
                    if item.get("type") == "message":
                        epoch, first, bodies = item["data"].decode().split(" ", 2)
                        queue.put_nowait((epoch, _numbered(int(first), json.loads(bodies))))
            finally:
                queue.put_nowait(None)

        try:
            await pubsub.subscribe(PREFIX + topic + ":feed")
            while ((await pubsub.get_message(timeout=5)) or {}).get("type") != "subscribe":
                pass  # until Redis confirms: from now on every batch reaches this feed
            task = asyncio.get_running_loop().create_task(pump())
            try:
                yield queue
            finally:
                task.cancel()
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()
                await client.aclose()

    def entries(self, topic: str) -> list[tuple[int, str]]:
        out = []
        for raw in self._redis.lrange(PREFIX + topic, 0, -1):
            text = raw.decode()
            seq, _, body = text.partition(" ")
            out.append((int(seq), body))
        return out


@lru_cache(maxsize=4)
def _log_for(url: str) -> MemoryLog | RedisLog:
    return RedisLog(url) if url else MemoryLog()


def log() -> MemoryLog | RedisLog:
    return _log_for(settings.REDIS_URL)


def append_many(batches: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
    """Each topic's messages numbered in order, kept and sent on the topic's feed; each topic's first number."""
    return log().append_many(batches)


def feed(topic: str) -> contextlib.AbstractAsyncContextManager[asyncio.Queue]:
    """``async with feed(topic) as queue``: every batch appended from now on, as ``(epoch, numbered
    messages)``; ``None`` when the feed broke (a lost Redis connection: whatever came meanwhile is in
    the log, unless Redis came back empty: a new epoch)."""
    return log().feed(topic)


def epoch() -> str:
    """The epoch the numbers belong to now (docstring above)."""
    return log().epoch()


def since(topic: str, after: int) -> list[dict[str, Any]] | None:
    """Messages of ``topic`` numbered above ``after``, oldest first; ``None`` when the reader must
    resync: some were dropped from the log already, or ``after`` is a number the log has not given
    out (it came from an earlier epoch)."""
    entries = log().entries(topic)
    last = log().last(topic)
    if after > last:
        return None
    if after == last:
        return []
    if not entries or entries[0][0] > after + 1:
        return None
    out = []
    for seq, body in entries:
        if seq > after:
            message = json.loads(body)
            message["seq"] = seq
            out.append(message)
    return out


_sealers = threading.local()  # per thread: a cipher context is not to be shared between threads


def _sealer() -> tuple[Any, Any]:
    """This thread's AES encryptor and decryptor under the key of ``SECRET_KEY``, made once."""
    secret = settings.SECRET_KEY
    if getattr(_sealers, "secret", None) != secret:
        key = salted_hmac("gangweb.live.position", "", secret=secret, algorithm="sha256").digest()[:16]
        # One block per position, each (epoch, number) its own plaintext: no chaining, no nonce needed.
        cipher = Cipher(algorithms.AES(key), modes.ECB())
        _sealers.secret, _sealers.contexts = secret, (cipher.encryptor(), cipher.decryptor())
    return _sealers.contexts


def _block(epoch: str, seq: int) -> bytes:
    return hashlib.sha256(epoch.encode()).digest()[:8] + seq.to_bytes(8, "big")


def seal(epoch: str, seq: int) -> str:
    """``seq`` of ``epoch`` as a position a reader holds without learning the number: 22 characters, one
    AES block under a key from ``SECRET_KEY``. A reader who may not see every message of a topic gets
    these, as the gaps between plain numbers would count other teams' events."""
    sealed = _sealer()[0].update(_block(epoch, seq))
    return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode()


def unseal(epoch: str, position: Any) -> int | None:
    """The number ``seal(epoch, n)`` sealed; None for anything else (another epoch, another key, garbage)."""
    if not isinstance(position, str) or len(position) != 22:
        return None
    try:
        raw = base64.urlsafe_b64decode(position + "==")
    except ValueError:
        return None
    if len(raw) != 16:  # a partial block would stay in the shared context
        return None
    block = _sealer()[1].update(raw)
    seq = int.from_bytes(block[8:], "big")
    return seq if block == _block(epoch, seq) else None


def latest(topic: str, count: int) -> list[dict[str, Any]]:
    """The newest ``count`` messages of ``topic``, oldest first (a page's backfill)."""
    out = []
    for seq, body in log().entries(topic)[-count:]:
        message = json.loads(body)
        message["seq"] = seq
        out.append(message)
    return out
