"""The live stream's topics: every event gets a sequence number in its topic and is kept a while.

A browser subscribes to the topics its page shows and remembers the last sequence number it applied
per topic. After a reconnect it asks for what came after; the server answers from this log, or, when
the log no longer reaches back that far, tells it to resync (fetch the page's data again). The log is
a bounded Redis list per topic (``REDIS_URL``; every process shares it) or, without Redis (the
one-process demo), a deque in this process. Numbers are assigned with the append, atomically.

The same log backfills a page on load (the activity feed, the admission decisions).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from functools import lru_cache
from typing import Any

from django.conf import settings

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
    ),
    "decisions": ("admission.decisions",),
    "activity": (),
}
TOPIC_OF = {event: topic for topic, events in TOPICS.items() for event in events}
KEEP = {"map": 300, "ledger": 2000, "decisions": 500, "activity": 500}
PREFIX = "gangweb:live:"

# INCR the topic's number, append "<seq> <json>", trim to the bound, in one step.
_APPEND = """
local seq = redis.call('INCR', KEYS[1])
redis.call('RPUSH', KEYS[2], seq .. ' ' .. ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
return seq
"""


def topic_of(event_type: str) -> str:
    return TOPIC_OF.get(event_type, "activity")


class MemoryLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq: dict[str, int] = {}
        self._items: dict[str, deque[tuple[int, str]]] = {}

    def append(self, topic: str, message: dict[str, Any]) -> int:
        with self._lock:
            seq = self._seq.get(topic, 0) + 1
            self._seq[topic] = seq
            items = self._items.setdefault(topic, deque(maxlen=KEEP.get(topic, 500)))
            items.append((seq, json.dumps(message)))
            return seq

    def last(self, topic: str) -> int:
        return self._seq.get(topic, 0)

    def entries(self, topic: str) -> list[tuple[int, str]]:
        with self._lock:
            return list(self._items.get(topic, ()))


class RedisLog:
    def __init__(self, url: str) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=5)
        self._append = self._redis.register_script(_APPEND)

    def append(self, topic: str, message: dict[str, Any]) -> int:
        # The script assigns the number; the stored text starts with it (its body's "seq" is not read).
        body = json.dumps(message)
        keys = [PREFIX + topic + ":seq", PREFIX + topic]
        return int(self._append(keys=keys, args=[body, KEEP.get(topic, 500)]))

    def last(self, topic: str) -> int:
        return int(self._redis.get(PREFIX + topic + ":seq") or 0)

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


def append(topic: str, message: dict[str, Any]) -> int:
    return log().append(topic, message)


def since(topic: str, after: int) -> list[dict[str, Any]] | None:
    """Messages of ``topic`` numbered above ``after``, oldest first; ``None`` when some were dropped
    from the log already (the reader must resync)."""
    entries = log().entries(topic)
    last = log().last(topic)
    if after >= last:
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


def latest(topic: str, count: int) -> list[dict[str, Any]]:
    """The newest ``count`` messages of ``topic``, oldest first (a page's backfill)."""
    out = []
    for seq, body in log().entries(topic)[-count:]:
        message = json.loads(body)
        message["seq"] = seq
        out.append(message)
    return out
