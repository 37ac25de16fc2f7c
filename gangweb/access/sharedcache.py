"""Review answers shared by every web process through Redis when ``REDIS_URL`` is set, else (and while
Redis does not answer) kept in this process (docs/design.md, "Access: review answers in Redis").

Redis sees no token and no plain digest of one: every key is an HMAC of what it stands for under
``SECRET_KEY``, and every value is signed together with its key and the wall-clock time it expires, so
that a writer of Redis without ``SECRET_KEY`` can neither forge an answer, move one to another key, nor
keep one alive past its expiry; what it can do is delete answers (more reviews) or store garbage (read
as a miss).
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from typing import Any

from django.conf import settings
from django.utils.crypto import salted_hmac

from gangweb.access.ttlcache import TTLCache
from scheduler import redisclient

logger = logging.getLogger(__name__)

PREFIX = "gangweb:review:"
RETRY_AFTER_FAILURE_SECONDS = 5.0  # how long a process keeps to its own cache once Redis did not answer


def _mac(purpose: str, text: str) -> str:
    return salted_hmac(f"gangweb.access.sharedcache.{purpose}", text, algorithm="sha256").hexdigest()


class SharedCache:
    """``get``/``put`` like ``TTLCache`` (values JSON-able, keys strings), in Redis under ``PREFIX + kind``."""

    def __init__(self, kind: str, max_local: int) -> None:
        self.kind = kind
        self.local = TTLCache(max_local)
        self._down_until = 0.0
        self.failing = False

    def _name(self, key: str) -> str:
        return f"{PREFIX}{self.kind}:{_mac('key', key)}"

    def _redis(self) -> Any:
        """The Redis client, or None: no ``REDIS_URL``, or Redis failed moments ago."""
        url = settings.REDIS_URL
        if not url or time.monotonic() < self._down_until:
            return None
        return redisclient.shared(url)

    def _failed(self, exc: Exception) -> None:
        if not self.failing:
            logger.warning("review answers fall back to this process: Redis: %s", str(exc)[:300])
        self.failing = True
        self._down_until = time.monotonic() + RETRY_AFTER_FAILURE_SECONDS

    def get(self, key: str) -> tuple[bool, Any]:
        """(True, value) while an unexpired answer with a valid signature is kept, else (False, None)."""
        client = self._redis()
        if client is None:
            return self.local.get(key)
        name = self._name(key)
        try:
            raw = client.get(name)
        except Exception as exc:  # down, timed out, refused
            self._failed(exc)
            return self.local.get(key)
        self.failing = False
        if raw is None:
            return False, None
        try:
            envelope = json.loads(raw)
            body, signature = envelope["b"], envelope["s"]
            if not hmac.compare_digest(signature, _mac("value", f"{name}\n{body}")):
                raise ValueError("bad signature")
            expires, value = json.loads(body)
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("a review answer in Redis is not gangweb's (%s): reviewed again", exc)
            return False, None
        if float(expires) <= time.time():
            return False, None
        return True, value

    def put(self, key: str, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        client = self._redis()
        if client is None:
            self.local.put(key, value, ttl)
            return
        name = self._name(key)
        body = json.dumps([time.time() + ttl, value], separators=(",", ":"))
        envelope = json.dumps({"b": body, "s": _mac("value", f"{name}\n{body}")}, separators=(",", ":"))
        try:
            client.set(name, envelope, px=max(1, int(ttl * 1000)))
        except Exception as exc:
            self._failed(exc)
            self.local.put(key, value, ttl)
            return
        self.failing = False

    def clear(self) -> None:
        """Forget every answer, this process's and Redis's (tests)."""
        self.local.clear()
        self._down_until = 0.0
        if not settings.REDIS_URL:
            return
        import redis

        client = redisclient.shared(settings.REDIS_URL)
        try:
            names = list(client.scan_iter(match=f"{PREFIX}{self.kind}:*", count=1000))
            if names:
                client.delete(*names)
        except redis.RedisError as exc:
            logger.warning("cannot clear the review answers in Redis: %s", exc)
