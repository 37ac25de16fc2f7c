"""Node locks: at most one execution touches a node at a time.

A lock is a Redis key with an owner token and an expiry. An execution takes the locks of every node
its plan touches in sorted order (two executions can never each hold what the other waits for), keeps
them alive with a heartbeat while it works, and releases them when it ends, failure included. A worker
killed with SIGKILL cannot release anything; its locks expire after ``ttl`` seconds and the successor
proceeds. Release and refresh only act on keys that still carry our token.

Without ``REDIS_URL`` (the demo: tasks run in-process) the same logic runs on a process-local store.
"""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterable, Iterator

from django.conf import settings

KEY_PREFIX = "gangweb:lock:"

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
_REFRESH = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
)


class LockBusy(Exception):
    """Another execution holds one of the locks; try again later."""

    def __init__(self, key: str):
        super().__init__(f"{key.removeprefix(KEY_PREFIX)} is locked by another execution")
        self.key = key


class _RedisStore:
    def __init__(self, url: str):
        import redis

        self.client = redis.Redis.from_url(url)
        self._release = self.client.register_script(_RELEASE)
        self._refresh = self.client.register_script(_REFRESH)

    def acquire(self, key: str, token: str, ttl_ms: int) -> bool:
        return bool(self.client.set(key, token, nx=True, px=ttl_ms))

    def refresh(self, key: str, token: str, ttl_ms: int) -> bool:
        return bool(self._refresh(keys=[key], args=[token, ttl_ms]))

    def release(self, key: str, token: str) -> None:
        self._release(keys=[key], args=[token])

    def owner(self, key: str) -> str | None:
        value = self.client.get(key)
        return value.decode() if value is not None else None


class _LocalStore:
    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held: dict[str, tuple[str, float]] = {}

    def _live(self, key: str) -> tuple[str, float] | None:
        entry = self._held.get(key)
        if entry and entry[1] <= time.monotonic():
            del self._held[key]
            return None
        return entry

    def acquire(self, key: str, token: str, ttl_ms: int) -> bool:
        with self._mutex:
            if self._live(key):
                return False
            self._held[key] = (token, time.monotonic() + ttl_ms / 1000)
            return True

    def refresh(self, key: str, token: str, ttl_ms: int) -> bool:
        with self._mutex:
            entry = self._live(key)
            if not entry or entry[0] != token:
                return False
            self._held[key] = (token, time.monotonic() + ttl_ms / 1000)
            return True

    def release(self, key: str, token: str) -> None:
        with self._mutex:
            entry = self._live(key)
            if entry and entry[0] == token:
                del self._held[key]

    def owner(self, key: str) -> str | None:
        with self._mutex:
            entry = self._live(key)
            return entry[0] if entry else None


_local_store = _LocalStore()


def _store():
    return _RedisStore(settings.REDIS_URL) if settings.REDIS_URL else _local_store


def node_key(node: str) -> str:
    return f"{KEY_PREFIX}node:{node}"


def request_key(request_id: int) -> str:
    return f"{KEY_PREFIX}request:{request_id}"


def lock_ttl_seconds() -> float:
    return float(getattr(settings, "GANGWEB_LOCK_TTL_SECONDS", 30))


def is_locked(key: str) -> bool:
    return _store().owner(key) is not None


@contextmanager
def hold(keys: Iterable[str], *, ttl: float | None = None, wait: float = 5.0, owner: str = "") -> Iterator[list[str]]:
    """Hold every key (sorted acquisition), refreshed by a heartbeat; raise LockBusy after ``wait`` s."""
    store = _store()
    ttl_ms = int((ttl or lock_ttl_seconds()) * 1000)
    token = f"{owner}:{uuid.uuid4().hex}"
    ordered = sorted(set(keys))
    held: list[str] = []
    stop = threading.Event()
    heartbeat = None
    try:
        deadline = time.monotonic() + wait
        for key in ordered:
            while not store.acquire(key, token, ttl_ms):
                if time.monotonic() >= deadline:
                    raise LockBusy(key)
                time.sleep(0.1)
            held.append(key)

        def beat() -> None:
            while not stop.wait(ttl_ms / 3000):
                for key in held:
                    store.refresh(key, token, ttl_ms)

        heartbeat = threading.Thread(target=beat, name="gangweb-lock-heartbeat", daemon=True)
        heartbeat.start()
        yield list(held)
    finally:
        stop.set()
        if heartbeat is not None:
            heartbeat.join(timeout=2)
        for key in reversed(held):
            try:
                store.release(key, token)
            except Exception:  # expiry frees it anyway; never mask the real outcome
                pass
