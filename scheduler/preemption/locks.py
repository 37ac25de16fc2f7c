"""Node locks: at most one execution touches a node at a time.

A lock is a Redis key with an owner token and an expiry. An execution takes the locks of every node
its plan touches in sorted order (two executions can never each hold what the other waits for), keeps
them alive with a heartbeat while it works, and releases them when it ends, failure included. A worker
killed with SIGKILL cannot release anything; its locks expire after ``ttl`` seconds and the successor
proceeds. Release and refresh only act on keys that still carry our token.

Without ``REDIS_URL`` (the demo: tasks run in-process) the same logic runs on a process-local store.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.conf import settings

from scheduler import redisclient

logger = logging.getLogger(__name__)

KEY_PREFIX = "gangweb:lock:"

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
_REFRESH = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"


class LockBusy(Exception):
    """Another execution holds one of the locks; try again later."""

    def __init__(self, key: str):
        super().__init__(f"{key.removeprefix(KEY_PREFIX)} is locked by another execution")
        self.key = key


class _RedisStore:
    def __init__(self, url: str):
        self.client = redisclient.shared(url, timeout=None)
        self._release = redisclient.shared_script(url, _RELEASE, timeout=None)
        self._refresh = redisclient.shared_script(url, _REFRESH, timeout=None)

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


def store() -> _RedisStore | _LocalStore:
    """The lock store (Redis with ``REDIS_URL``, else this process's) for a holder outside ``hold``."""
    return _store()


def node_key(node: str) -> str:
    return f"{KEY_PREFIX}node:{node}"


def request_key(request_id: int) -> str:
    return f"{KEY_PREFIX}request:{request_id}"


def lock_ttl_seconds() -> float:
    return float(getattr(settings, "GANGWEB_LOCK_TTL_SECONDS", 30))


def is_locked(key: str) -> bool:
    return _store().owner(key) is not None


class Stopped(Exception):
    """The holder was told to stop (a time limit fired in its main thread): start no new API call."""


class LockLost(Stopped):
    """The holder can no longer prove it holds its locks (a refresh failed or found the key gone)."""


class Lease:
    """What ``hold`` hands its caller: whether the locks are still ours, and for how long for sure.

    A lock is ours for certain until ``ttl`` after the last refresh that succeeded for every key; after a
    refresh that found a key gone (Redis restarted, the key expired) it is not ours at all.
    ``check(margin)`` raises ``LockLost`` unless the locks stay ours for ``margin`` more seconds, so a call
    bounded by ``margin`` (the API client's request timeout) is never still in flight when another holder
    may take the lock. ``stop()`` makes every later ``check`` raise ``Stopped``: the holder's threads
    finish the call they are in and start no other.
    """

    def __init__(self, ttl: float, since: float | None = None, clock=time.monotonic):
        """``since``: when the first key was asked for (its expiry is ``ttl`` after that at the latest)."""
        self.ttl = ttl
        self._clock = clock
        self._valid_until = (clock() if since is None else since) + ttl
        self._lost = ""
        self._stopped = ""
        self.stopping = threading.Event()  # set once the holder must stop; waits in retries watch it
        self.refreshes = 0  # heartbeats that refreshed every key
        self._beat = threading.Condition()

    def refreshed(self, at: float) -> None:
        with self._beat:
            self._valid_until = max(self._valid_until, at + self.ttl)
            self.refreshes += 1
            self._beat.notify_all()

    def wait_refreshes(self, count: int, timeout: float) -> bool:
        """True once the heartbeat has refreshed every key ``count`` times; False after ``timeout`` s."""
        with self._beat:
            return self._beat.wait_for(lambda: self.refreshes >= count, timeout)

    def lose(self, why: str) -> None:
        self._lost = self._lost or why
        self.stopping.set()

    def stop(self, why: str) -> None:
        self._stopped = self._stopped or why
        self.stopping.set()

    @property
    def lost(self) -> str:
        if not self._lost and self._clock() >= self._valid_until:
            self.lose("not refreshed within the lock TTL")
        return self._lost

    def remaining(self) -> float:
        return 0.0 if self.lost else max(0.0, self._valid_until - self._clock())

    def check(self, margin: float = 0.0) -> None:
        """Raise unless the holder may start a call that takes up to ``margin`` seconds."""
        if self.lost:
            raise LockLost(f"node locks lost: {self.lost}")
        if self._stopped:
            raise Stopped(self._stopped)
        left = self.remaining()
        if left <= margin:
            raise LockLost(
                f"node locks are certain for {left:.1f} s more, less than the {margin:.1f} s an "
                "API call may take"
            )


@contextmanager
def hold(
    keys: Iterable[str], *, ttl: float | None = None, wait: float = 5.0, owner: str = ""
) -> Iterator[Lease]:
    """Hold every key (sorted acquisition), refreshed by a heartbeat; raise LockBusy after ``wait`` s.

    Yields a ``Lease``. A refresh that fails (Redis unreachable) is retried every second; one that
    finds a key no longer ours loses the lease at once. Either way the lease ends no later than one
    TTL after the last successful refresh, which is when the keys may expire."""
    store = _store()
    ttl_s = ttl or lock_ttl_seconds()
    ttl_ms = int(ttl_s * 1000)
    token = f"{owner}:{uuid.uuid4().hex}"
    ordered = sorted(set(keys))
    held: list[str] = []
    stop = threading.Event()
    heartbeat = None
    lease: Lease | None = None
    try:
        deadline = time.monotonic() + wait
        for key in ordered:
            asked = time.monotonic()
            while not store.acquire(key, token, ttl_ms):
                if time.monotonic() >= deadline:
                    raise LockBusy(key)
                time.sleep(0.1)
                asked = time.monotonic()
            if lease is None:  # the first key's expiry bounds the lease; later keys expire later
                lease = Lease(ttl_s, since=asked)
            held.append(key)
        lease = lease or Lease(ttl_s)

        def beat() -> None:
            interval = ttl_s / 3
            while not stop.wait(interval):
                started = time.monotonic()
                try:
                    mine = all(store.refresh(key, token, ttl_ms) for key in held)
                except Exception as exc:  # Redis unreachable: try again soon, the lease runs down meanwhile
                    logger.warning("could not refresh node locks", extra={"owner": owner, "error": str(exc)})
                    interval = min(1.0, ttl_s / 3)
                    if lease.lost:
                        return
                    continue
                if not mine:
                    lease.lose("a lock key was gone or held by someone else at refresh")
                    logger.error("node locks lost", extra={"owner": owner, "keys": held})
                    return
                lease.refreshed(started)
                interval = ttl_s / 3

        heartbeat = threading.Thread(target=beat, name="gangweb-lock-heartbeat", daemon=True)
        heartbeat.start()
        yield lease
    finally:
        stop.set()
        if heartbeat is not None:
            heartbeat.join(timeout=2)
        for key in reversed(held):
            try:
                store.release(key, token)
            except Exception:  # expiry frees it anyway; never mask the real outcome
                pass
