"""Admission decisions for the dashboard, published off the request path.

The webhook answers first; a decision is only *offered* to a bounded in-process queue. One background
thread drains it into ``gangweb.events.publish``. When the queue is full or publishing fails (Redis or
the database down), the decision is dropped and counted: the dashboard is a view, and admission must
never wait on it.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from admission.metrics import EVENTS_DROPPED, EVENTS_RECORDED

logger = logging.getLogger(__name__)

EVENT_TYPE = "admission.decision"
Publish = Callable[[str, dict[str, Any]], None]


def _default_publish(event_type: str, payload: dict[str, Any]) -> None:
    from gangweb.events import publish  # imported lazily: the pure modules never need Django

    publish(event_type, payload)


class DecisionRecorder:
    def __init__(self, publish: Publish | None = None, capacity: int = 1000) -> None:
        self._publish = publish or _default_publish
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=capacity)
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def offer(self, payload: dict[str, Any]) -> None:
        """Never blocks: a full queue drops the decision."""
        self._ensure_thread()
        try:
            self._queue.put_nowait(payload)
        except queue.Full:
            EVENTS_DROPPED.labels("queue_full").inc()

    def _ensure_thread(self) -> None:
        # Started on first use, so a forked server worker gets its own thread.
        if self._thread is not None and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._drain, name="admission-recorder", daemon=True)
                self._thread.start()

    def _drain(self) -> None:
        while True:
            payload = self._queue.get()
            try:
                self._publish(EVENT_TYPE, payload)
            except Exception:
                EVENTS_DROPPED.labels("publish_failed").inc()
                logger.warning("admission decision not published", exc_info=True)
            else:
                EVENTS_RECORDED.inc()
            finally:
                self._queue.task_done()

    def join(self, timeout: float = 5.0) -> bool:
        """Wait until everything offered so far was handled (tests and shutdown)."""
        done = threading.Event()
        threading.Thread(target=lambda: (self._queue.join(), done.set()), daemon=True).start()
        return done.wait(timeout)
