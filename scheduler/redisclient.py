"""Redis clients, made one way: each one's connects and calls give up after a timeout.

Redis holds views and coordination (locks, claims, throttles, the live stream), never the truth, so a
Redis that does not answer must cost a caller seconds, not a hung thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis

TIMEOUT_SECONDS = 2.0


def connect(url: str, *, timeout: float | None = TIMEOUT_SECONDS) -> redis.Redis:
    """A client of ``url`` (its own connection pool) whose connects and calls give up after ``timeout``
    seconds; None waits as long as Redis takes."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
