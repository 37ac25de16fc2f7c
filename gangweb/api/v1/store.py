"""Short rolling histories the ledger does not keep: admission decisions and GPU-usage samples; the
webhook's decisions are kept by ``keep_and_send``, the publisher gangweb connects to the webhook.

A ``Recent`` is a capped list, newest first: in Redis (``LPUSH`` + ``LTRIM``, shared by every process)
when ``REDIS_URL`` is set, else in this process (the demo, where the webhook, the sampler and the API
share one). Writing never raises: these are views of the system, and Redis being down must cost the
webhook or the sampler nothing but the entries themselves (counted in ``lost``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from admission.recorder import EVENT_TYPE as DECISIONS_EVENT
from scheduler import redisclient

logger = logging.getLogger(__name__)


class Recent:
    def __init__(self, name: str, maxlen: int) -> None:
        self.key = f"gangweb:{name}"
        self.maxlen = maxlen
        self.lost = 0
        self.failing = False
        self._memory: deque[str] = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def _redis(self):
        url = settings.REDIS_URL
        return redisclient.shared(url) if url else None

    def push(self, items: list[dict[str, Any]]) -> None:
        """Add ``items`` (oldest first); the list keeps the newest ``maxlen``."""
        if not items:
            return
        encoded = [json.dumps(item, separators=(",", ":"), default=str) for item in items]
        try:
            client = self._redis()
            if client is None:
                with self._lock:
                    self._memory.extendleft(encoded)
                return
            pipe = client.pipeline()
            pipe.lpush(self.key, *encoded)
            pipe.ltrim(self.key, 0, self.maxlen - 1)
            pipe.execute()
        except Exception as exc:
            first = not self.failing
            self.failing = True
            self.lost += len(items)
            if first:  # one warning an outage (Redis down is one, not a bug: no traceback for it)
                from redis.exceptions import ConnectionError as RedisDown
                from redis.exceptions import TimeoutError as RedisSlow

                logger.warning(
                    "cannot keep recent %s (%s); counting what is lost until Redis answers again",
                    self.key,
                    str(exc)[:300] or type(exc).__name__,
                    exc_info=not isinstance(exc, (RedisDown, RedisSlow)),
                )
        else:
            self.failing = False

    def newest(self, count: int | None = None) -> list[dict[str, Any]]:
        """Up to ``count`` entries, newest first."""
        count = self.maxlen if count is None else min(count, self.maxlen)
        client = self._redis()
        if client is None:
            with self._lock:
                raw = list(self._memory)[:count]
        else:
            raw = client.lrange(self.key, 0, count - 1)
        return [json.loads(item) for item in raw]

    def clear(self) -> None:
        client = self._redis()
        if client is None:
            with self._lock:
                self._memory.clear()
        else:
            client.delete(self.key)


DECISIONS = Recent("admission-decisions", 5000)


def keep_and_send(event_type: str, payload: dict[str, Any]) -> None:
    """The publisher gangweb connects to the webhook's seam (``scheduler.publishing.DECISIONS``): each
    interval's decisions kept in ``DECISIONS``, newest first and stamped with ``at`` (when kept), then
    sent live (``gangweb.events.send``, which raises ``PublishFailed`` when refused)."""
    from gangweb import events

    if event_type == DECISIONS_EVENT:
        at = datetime.now(UTC).isoformat()
        DECISIONS.push([{**d, "at": at} for d in reversed(payload.get("decisions") or [])])
    events.send(event_type, payload)


# One sample a GANGWEB_USAGE_SAMPLE_SECONDS (60): six hours.
USAGE = Recent("usage-samples", 360)
