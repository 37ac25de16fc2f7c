"""Celery beat with a leader: any number of beat processes run, and only the one holding a Redis lock sends
the periodic tasks (docs/design.md, "Periodic work").

Beat is the one process that must not run twice (each copy would queue every task again), yet one copy on one
node leaves the cluster without detection for as long as that node takes to be declared lost. So deploy/
runs two, and each asks for the lock ``gangweb:lock:beat`` (the node locks' store, scheduler/preemption/
locks.py) on every tick: the holder refreshes it every third of ``GANGWEB_BEAT_LOCK_SECONDS`` and sends only
while the lock is certainly still its own; a holder killed outright stops refreshing, the key expires, and
the other copy takes it on its next tick and sends what has come due. A holder that stops cleanly gives the
lock back at once.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid

from celery.beat import PersistentScheduler
from django.conf import settings

from scheduler.preemption import locks

logger = logging.getLogger(__name__)

KEY = f"{locks.KEY_PREFIX}beat"


def lock_seconds() -> float:
    return float(settings.GANGWEB_BEAT_LOCK_SECONDS)


def holder() -> str | None:
    """Who sends the periodic tasks now: the holder's ``host:pid:nonce``, or None."""
    return locks.store().owner(KEY)


class LeaderScheduler(PersistentScheduler):
    """PersistentScheduler that ticks only while it holds the beat lock."""

    def __init__(self, *args, **kwargs):
        self._token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._certain_until = 0.0  # monotonic: the lock is ours for sure until then
        self._refreshed_at = 0.0
        self._leading = False
        self._locks = None
        super().__init__(*args, **kwargs)

    def _lead(self) -> bool:
        """Take or keep the lock; True while it stays ours for at least a third of its TTL more."""
        ttl = lock_seconds()
        ttl_ms = int(ttl * 1000)
        now = time.monotonic()
        try:
            store = self._locks = self._locks or locks.store()
            if self._leading:
                if now - self._refreshed_at >= ttl / 3:
                    if store.refresh(KEY, self._token, ttl_ms):
                        self._refreshed_at, self._certain_until = now, now + ttl
                    else:
                        self._leading = False
                        logger.warning("beat lost its lock: another beat sends the periodic tasks")
            elif store.acquire(KEY, self._token, ttl_ms):
                self._leading, self._refreshed_at, self._certain_until = True, now, now + ttl
                logger.info("beat holds the lock and sends the periodic tasks", extra={"holder": self._token})
        except Exception as exc:  # Redis unreachable: the lease runs down, and sending stops with it
            logger.warning("beat cannot reach its lock: %s", str(exc)[:300])
        if self._leading and time.monotonic() + ttl / 3 > self._certain_until:
            self._leading = False
            logger.warning("beat could not refresh its lock in time: it stops sending")
        return self._leading

    def tick(self, *args, **kwargs):
        wait = lock_seconds() / 3
        if not self._lead():
            return min(1.0, wait)
        return min(super().tick(*args, **kwargs), wait)

    def close(self):
        try:
            super().close()
        finally:
            if self._leading:
                try:
                    (self._locks or locks.store()).release(KEY, self._token)
                except Exception:  # expiry frees it anyway
                    pass
                self._leading = False
