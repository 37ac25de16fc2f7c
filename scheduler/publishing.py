"""The one seam live events leave ``scheduler/`` and ``admission/`` by, and its one failure rule.

The pipeline and the webhook say what happened; carrying it to browsers is the project's business, so
neither imports ``gangweb``: its ``AppConfig.ready()`` connects a publisher to each seam below.

The rule, for every publisher: it takes the event or raises ``PublishRefused`` (nothing connected is a
refusal too); anything else it raises is a bug. ``Seam.send`` lets neither reach its caller, because a
ledger write or an admission answer must not fail for the dashboard: it says whether the event was
taken, and tells the log twice, when sends start failing (with the traceback if it was a bug) and when
they work again (how long, how many lost).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

Publish = Callable[[str, dict[str, Any]], None]


class PublishRefused(Exception):
    """The publisher did not take the event (the channel layer is down, a send timed out, nothing is
    connected): an outage, not a bug."""


class Seam:
    """One place one kind of event leaves by: the publisher connected at startup, and the outage it is in."""

    def __init__(self, what: str, publish: Publish | None = None) -> None:
        self.what = what  # what leaves by it, for the log: "admission decisions"
        self._publish = publish
        self._lock = threading.Lock()
        self._failing_since: float | None = None
        self._lost = 0

    @property
    def publisher(self) -> Publish | None:
        return self._publish

    def connect(self, publish: Publish | None) -> None:
        """Send every later event through ``publish`` (None: refuse them again)."""
        self._publish = publish

    def send(self, event_type: str, payload: dict[str, Any], *, items: int = 1) -> bool:
        """Hand the event to the publisher; whether it was taken. Never raises; ``items`` is what the
        event carries (a batch of decisions), counted as lost when it is not taken."""
        publish = self._publish
        try:
            if publish is None:
                raise PublishRefused(f"nothing is connected to this seam ({__name__})")
            publish(event_type, payload)
        except Exception as error:
            self._failed(event_type, error, items)
            return False
        if self._failing_since is not None:  # unlocked read: the common case costs nothing
            self._worked()
        return True

    def _failed(self, event_type: str, error: Exception, items: int) -> None:
        with self._lock:
            self._lost += items
            if self._failing_since is not None:
                return
            self._failing_since = time.monotonic()
        logger.warning(
            "%s are not reaching the dashboard (%s); dropping them until they do, the first was %r",
            self.what,
            str(error)[:300] or type(error).__name__,
            event_type,
            exc_info=not isinstance(error, PublishRefused),  # a bug: show where
        )

    def _worked(self) -> None:
        with self._lock:
            if self._failing_since is None:
                return
            lasted, lost = time.monotonic() - self._failing_since, self._lost
            self._failing_since, self._lost = None, 0
        logger.warning(
            "%s reach the dashboard again after %.0f s; %d were dropped meanwhile", self.what, lasted, lost
        )


# What the ledger's writes tell browsers (``scheduler.preemption.events.publish``).
LEDGER = Seam("the ledger's events")
# The webhook's decisions, one batch an interval (``admission.recorder.DecisionRecorder``).
DECISIONS = Seam("admission decisions")
