"""Redis clients, made one way: each one's connects and calls give up after a timeout.

Redis holds views and coordination (locks, claims, throttles, the live stream), never the truth, so a
Redis that does not answer must cost a caller seconds, not a hung thread.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis
    import redis.asyncio
    from redis.commands.core import Script

TIMEOUT_SECONDS = 2.0

_shared: dict[tuple[str, float | None], redis.Redis] = {}
_scripts: dict[tuple[str, float | None, str], Script] = {}
_shared_lock = threading.Lock()


def connect(url: str, *, timeout: float | None = TIMEOUT_SECONDS) -> redis.Redis:
    """A client of ``url`` (its own connection pool) whose connects and calls give up after ``timeout``
    seconds; None waits as long as Redis takes."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def shared(url: str, *, timeout: float | None = TIMEOUT_SECONDS) -> redis.Redis:
    """This process's one client of ``url`` with ``timeout`` (``connect``'s), made at the first call: callers
    that talk to Redis at every event share its connection pool instead of opening one each time."""
    key = (url, timeout)
    with _shared_lock:
        client = _shared.get(key)
        if client is None:
            client = _shared[key] = connect(url, timeout=timeout)
        return client


def shared_script(url: str, source: str, *, timeout: float | None = TIMEOUT_SECONDS) -> Script:
    """The Lua ``source`` registered once in this process on ``shared(url, timeout=timeout)``; calling it
    runs it by its digest (loaded again by redis-py when Redis forgot it, as after a restart)."""
    key = (url, timeout, source)
    script = _scripts.get(key)
    if script is None:
        client = shared(url, timeout=timeout)
        with _shared_lock:
            script = _scripts.setdefault(key, client.register_script(source))
    return script


def connect_async(
    url: str, *, timeout: float | None = TIMEOUT_SECONDS, connect_timeout: float | None = TIMEOUT_SECONDS
) -> redis.asyncio.Redis:
    """An asyncio client of ``url`` (its own connection pool, bound to the running loop) whose calls give up
    after ``timeout`` seconds and connects after ``connect_timeout``: a pub/sub reader waits for messages
    as long as they take (``timeout=None``), yet gives up connecting to a Redis that is not there."""
    import redis.asyncio

    return redis.asyncio.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=connect_timeout)
