"""Admission decisions for the dashboard, published off the request path, in batches.

The webhook answers first; a decision is only *offered* to a bounded in-process buffer (one append,
no lock held while publishing, never blocks). A background thread wakes every ``interval`` seconds
and publishes what accumulated as one ``admission.decisions`` event through
``gangweb.events.publish``. Batching matters: a busy cluster admits thousands of pods a second, and one
channel-layer send per pod would cost the server more CPU than the admission decisions themselves
(and no browser can show thousands of rows a second). When the buffer is full, or publishing fails
(Redis or the database down), decisions are dropped and counted: the dashboard is a view, and
admission must never wait on it.

Event payload: ``{"decisions": [...], "count": N, "dropped": D}``: up to ``max_batch`` most recent
decisions (each: uid, webhook, kind, namespace, name, operation, dryRun, allowed, message, warnings,
and for mutations podGroup, source, minCount, mode), the number of decisions in the interval, and
how many were dropped since the previous event.
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


class Recordable(Protocol):
    def as_event(self) -> dict[str, Any]: ...


class _FailureWatch(logging.Handler):
    """Notices the warning ``gangweb.events`` logs when a send fails, on the recorder's own thread.

    ``gangweb.events.publish`` never raises (a dashboard outage must not fail its callers), so this is
    how the recorder learns that a batch was lost, to count it.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.failed = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        self.failed.value = True


_EVENTS_LOGGER = "gangweb.events"
_failure_watch = _FailureWatch()
logging.getLogger(_EVENTS_LOGGER).addHandler(_failure_watch)


def _default_publish(event_type: str, payload: dict[str, Any]) -> None:
    from gangweb.events import publish  # imported lazily: the pure modules never need Django

    _failure_watch.failed.value = False
    publish(event_type, payload)
    if _failure_watch.failed.value:
        raise ConnectionError("the channel layer did not take the event (see the gangweb.events warning)")


class DecisionRecorder:
    def __init__(self, publish: Publish | None = None, capacity: int = 1000, interval: float = 0.5,
                 max_batch: int = 100) -> None:  # fmt: skip
        self._publish = publish or _default_publish
        self.capacity = capacity
        self.interval = interval
        self.max_batch = max_batch
        # deque.append/popleft are atomic: the request path never takes a lock here.
        self._buffer: deque[Recordable] = deque()
        self._dropped_since_publish = 0
        self._thread: threading.Thread | None = None
        self._thread_pid = 0
        self._start_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self.stats = RecorderStats()
        self._warned_at = -1e9

    def has_room(self) -> bool:
        """False when an offer now would be dropped; the caller can then skip building the decision."""
        if len(self._buffer) < self.capacity:
            return True
        self._drop()
        return False

    def offer(self, decision: Recordable) -> None:
        """Never blocks: a full buffer drops the decision."""
        if self._thread_pid != _pid:
            self._start()
        if len(self._buffer) >= self.capacity:
            self._drop()
            return
        if self._idle.is_set():
            self._idle.clear()
        self._buffer.append(decision)

    def _drop(self) -> None:
        self.stats.dropped["buffer_full"] += 1
        self._dropped_since_publish += 1

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
        """Publish what accumulated (the background thread calls this; tests may too)."""
        batch = []
        while self._buffer:
            batch.append(self._buffer.popleft())
        dropped, self._dropped_since_publish = self._dropped_since_publish, 0
        if batch or dropped:
            try:
                decisions = [decision.as_event() for decision in batch[-self.max_batch :]]
                self._publish(EVENT_TYPE, {"decisions": decisions, "count": len(batch), "dropped": dropped})
            except Exception:
                self.stats.dropped["publish_failed"] += len(batch)
                if time.monotonic() - self._warned_at > 60:  # an outage logs once a minute, not twice a second
                    self._warned_at = time.monotonic()
                    logger.warning("admission decisions not published (counted in "
                                   "gangweb_admission_events_dropped_total)", exc_info=True)  # fmt: skip
            else:
                self.stats.recorded += len(batch)
        if not self._buffer:
            self._idle.set()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """True once everything offered so far was published or dropped (tests and shutdown)."""
        return self._idle.wait(timeout)

