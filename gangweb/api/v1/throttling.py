"""The simulate throttle (``GANGWEB_SIMULATE_RATE``), counted in Redis when ``REDIS_URL`` is set, so that any
number of web replicas allow a user what one would (docs/design.md, "Shared limits").

The window is DRF's (the last ``duration`` seconds hold at most ``num_requests`` calls), kept as a sorted set
of call times per user and checked and charged in one Lua step, so two replicas cannot both admit the call
that fills it. While Redis does not answer, each process counts on its own (DRF's cache), as without Redis.
"""

from __future__ import annotations

import logging
import time
import uuid

from django.conf import settings
from rest_framework.throttling import ScopedRateThrottle

from scheduler import redisclient

logger = logging.getLogger(__name__)

PREFIX = "gangweb:throttle:"

# KEYS[1] the user's window; ARGV: now (s), duration (s), allowed calls, a unique member.
# Returns 0 when the call is charged, else the seconds until the oldest call leaves the window.
_CHARGE = """
local now, duration, allowed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - duration)
if redis.call('ZCARD', KEYS[1]) >= allowed then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return tostring(math.max(0.001, tonumber(oldest[2]) + duration - now))
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(duration * 1000))
return '0'
"""


class _Redis:
    def __init__(self) -> None:
        self.failing = False

    def charge(self, key: str, now: float, duration: int, allowed: int) -> float | None:
        """Seconds to wait (0: charged), or None when Redis does not answer."""
        try:
            script = redisclient.shared_script(settings.REDIS_URL, _CHARGE)
            answer = script(keys=[key], args=[repr(now), duration, allowed, uuid.uuid4().hex])
        except Exception as exc:
            if not self.failing:
                logger.warning("the simulate throttle falls back to this process: Redis: %s", str(exc)[:300])
            self.failing = True
            return None
        self.failing = False
        return float(answer)

    def clear(self) -> None:
        if not settings.REDIS_URL:
            return
        client = redisclient.shared(settings.REDIS_URL)
        keys = list(client.scan_iter(match=PREFIX + "*", count=1000))
        if keys:
            client.delete(*keys)


_redis = _Redis()


def clear() -> None:
    """Forget every count, Redis's and this process's (tests)."""
    from django.core.cache import cache

    _redis.clear()
    cache.clear()


class SharedScopedRateThrottle(ScopedRateThrottle):
    """DRF's ScopedRateThrottle with its window in Redis when ``REDIS_URL`` is set."""

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope or not settings.REDIS_URL:
            return super().allow_request(request, view)
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        wait = _redis.charge(PREFIX + key, time.time(), self.duration, self.num_requests)
        if wait is None:
            return super().allow_request(request, view)
        self._shared_wait = wait
        return wait <= 0

    def wait(self):
        shared = getattr(self, "_shared_wait", None)
        return shared if shared is not None else super().wait()
