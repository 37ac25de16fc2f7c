"""The pipeline's live events, carried by a publisher handed in at startup.

The pipeline says what happened (``publish("plan.created", {...})``); carrying it to browsers is the
Django project's job, so nothing here imports it: ``gangweb``'s ``AppConfig.ready()`` calls
``connect(gangweb.events.publish)``, which sends once the surrounding transaction commits and never
raises. Until something is connected (a process that set up Django without the ``gangweb`` app),
events are dropped, with one warning per process saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

Publish = Callable[[str, dict[str, Any]], None]

_publisher: Publish | None = None
_warned = False


def connect(publisher: Publish | None) -> None:
    """Send every later event through ``publisher`` (None: drop them again)."""
    global _publisher, _warned
    _publisher, _warned = publisher, False


def publish(event_type: str, payload: dict[str, Any]) -> None:
    """Hand one event to the connected publisher (which decides when it is sent; it must not raise)."""
    publisher = _publisher
    if publisher is not None:
        publisher(event_type, payload)
        return
    global _warned
    if not _warned:
        _warned = True
        logger.warning(
            "no publisher is connected to the pipeline's events (scheduler.preemption.events.connect); "
            "dropping %r and every later event",
            event_type,
        )
