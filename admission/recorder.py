"""Admission decisions for the dashboard, published off the request path, in batches.

The webhook answers first; a decision is only *offered*: appended to a deque that keeps the newest
``max_batch`` (appending to a full one lets the oldest go), and counted. Nothing is locked and nothing
waits. A background thread wakes every ``interval`` seconds and publishes the interval as one
``admission.decisions`` event through the publisher it was given (``admission.runtime`` hands it the
dashboard's, which gangweb connects at startup). Batching matters: a busy cluster
admits thousands of pods a second, and one channel-layer send per pod would cost the server more CPU
than the admission decisions themselves (and no browser can show thousands of rows a second).

Only the newest ``max_batch`` decisions are ever held, so a burst keeps few requests (their pods,
labels and annotations) alive.

Event payload: ``{"decisions": [...], "count": N, "dropped": D}``: the newest (up to ``max_batch``)
decisions of the interval (each: uid, webhook, kind, namespace, name, operation, dryRun, allowed,
message, warnings, and for mutations podGroup, source, minCount, mode), the number of decisions in the
interval, and how many earlier ones were lost because publishing failed (Redis or the database down)
since the previous event. The dashboard is a view: admission never waits on it.

An outage (Redis or the channel layer down) is logged twice: one warning when the first publish fails,
one when publishing works again (how long it lasted, how many decisions were dropped). The failed sends
in between are counted, not logged. The publisher tells the recorder a send failed by raising.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from admission.metrics import RecorderStats

logger = logging.getLogger(__name__)

# This process's id, kept current across fork: ``offer`` checks it per decision, and os.getpid() is
# a system call.
_pid = os.getpid()


def _after_fork() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork)

EVENT_TYPE = "admission.decisions"
Publish = Callable[[str, dict[str, Any]], None]


class PublishRefused(Exception):
    """What a publisher raises when the event was not taken (the channel layer is down, a send timed
    out): an outage the recorder counts and reports once. Any other exception from a publisher is a bug,
    logged with its traceback. The dashboard's publisher (``gangweb.events.send``) raises a subclass."""


class Recordable(Protocol):
    def as_event(self) -> dict[str, Any]: ...


class DecisionRecorder:
    def __init__(self, publish: Publish, interval: float = 0.5, max_batch: int = 100) -> None:
        # Sends one event at once, raising ``PublishRefused`` when it was not taken.
        self._publish = publish
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
        # While publishing fails: when it started and what was dropped since (logged once at each end).
        self._outage_since: float | None = None
        self._outage_dropped = 0

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
                self._publish(
                    EVENT_TYPE, {"decisions": decisions, "count": count, "dropped": self._lost_since_publish}
                )
            except Exception as error:
                self._lost_since_publish += count
                self.stats.dropped["publish_failed"] += count
                self._failed(error, count)
            else:
                self._lost_since_publish = 0
                self.stats.recorded += count
                self._recovered()
        with self._flushed:
            self._published_upto = offered
            self._flushed.notify_all()

    def _failed(self, error: Exception, count: int) -> None:
        """One warning when an outage starts; the flushes that fail after it only count."""
        self._outage_dropped += count
        if self._outage_since is not None:
            return
        self._outage_since = time.monotonic()
        logger.warning(
            "admission decisions are not reaching the dashboard (%s); dropping and counting them in "
            "gangweb_admission_events_dropped_total until publishing works again",
            str(error)[:300] or type(error).__name__,
            exc_info=not isinstance(error, PublishRefused),  # anything but a refused send is a bug: show it
        )

    def _recovered(self) -> None:
        """One warning when an outage ends, with how long it lasted and what it cost."""
        if self._outage_since is None:
            return
        logger.warning(
            "admission decisions reach the dashboard again after %.0f s; %d decisions were dropped",
            time.monotonic() - self._outage_since,
            self._outage_dropped,
        )
        self._outage_since, self._outage_dropped = None, 0

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """True once every decision offered before the call was published or counted lost (tests, shutdown)."""
        target = self.offered
        with self._flushed:
            return self._flushed.wait_for(lambda: self._published_upto >= target, timeout)
