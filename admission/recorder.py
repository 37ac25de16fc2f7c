"""Admission decisions for the dashboard, published off the request path, in batches.

The webhook answers first; a decision is only *offered*: appended to a deque that keeps the newest
``max_batch`` (appending to a full one lets the oldest go), and counted. Nothing is locked and nothing
waits. A background thread wakes every ``interval`` seconds and sends the interval as one
``admission.decisions`` event through its seam (``scheduler.publishing.DECISIONS``, whose publisher
gangweb connects at startup). Batching matters: one channel-layer send per pod would cost a busy
server more CPU than the admission decisions themselves, and no browser can show thousands a second.

Event payload: ``{"decisions": [...], "count": N, "dropped": D}``: the newest (up to ``max_batch``)
decisions of the interval (each: uid, webhook, kind, namespace, name, operation, dryRun, allowed,
message, warnings, and for mutations podGroup, source, minCount, mode), the number of decisions in the
interval, and how many earlier ones were lost because publishing failed since the previous event. A
failed send is counted here and told by the seam (its one failure rule, ``scheduler/publishing.py``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from typing import Any, Protocol

from admission.metrics import RecorderStats
from scheduler.publishing import Seam

logger = logging.getLogger(__name__)

# This process's id, kept current across fork: ``offer`` checks it per decision, and os.getpid() is
# a system call.
_pid = os.getpid()


def _after_fork() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork)

EVENT_TYPE = "admission.decisions"


class Recordable(Protocol):
    def as_event(self) -> dict[str, Any]: ...


class DecisionRecorder:
    def __init__(self, seam: Seam, interval: float = 0.5, max_batch: int = 100) -> None:
        self._seam = seam
        self.interval = interval
        self.max_batch = max_batch
        # deque.append and popleft are atomic: the request path takes no lock here.
        self._recent: deque[Recordable] = deque(maxlen=max_batch)
        # Written only by offering threads, read by the publishing thread. Several offering threads
        # (Django's threaded views) may rarely lose an increment: a dashboard count, not a ledger.
        self.offered = 0
        self._published_upto = 0
        self._lost_since_publish = 0
        self._flushed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._thread_pid = 0
        self._start_lock = threading.Lock()
        self.stats = RecorderStats()

    def offer(self, decision: Recordable) -> None:
        """Never blocks, never fails: only the newest ``max_batch`` decisions are kept."""
        if self._thread_pid != _pid:
            self._start()
        self._recent.append(decision)
        self.offered += 1

    def _start(self) -> None:
        # Started on first use, and again in a forked server worker (threads do not survive fork).
        with self._start_lock:
            if self._thread is not None and self._thread_pid == _pid:
                return
            self._thread_pid = _pid
            self._thread = threading.Thread(target=self._run, name="admission-recorder", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(self.interval)
            self.flush()

    def flush(self) -> None:
        """Publish the interval's decisions (the background thread calls this; tests may too)."""
        offered = self.offered
        count = offered - self._published_upto
        batch = []
        recent = self._recent
        while recent:
            batch.append(recent.popleft())
        # An outage alone publishes nothing: what it cost is told by the next event with decisions.
        if count or batch:
            try:
                decisions = [decision.as_event() for decision in batch]
            except Exception:  # a bug: shown, and the thread goes on with the next interval
                logger.exception("%d admission decisions could not be made into an event", len(batch))
                decisions = None
            payload = {"decisions": decisions, "count": count, "dropped": self._lost_since_publish}
            if decisions is not None and self._seam.send(EVENT_TYPE, payload, items=count):
                self._lost_since_publish = 0
                self.stats.recorded += count
            else:
                self._lost_since_publish += count
                self.stats.dropped["publish_failed"] += count
        with self._flushed:
            self._published_upto = offered
            self._flushed.notify_all()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """True once every decision offered before the call was published or counted lost (tests, shutdown)."""
        target = self.offered
        with self._flushed:
            return self._flushed.wait_for(lambda: self._published_upto >= target, timeout)
