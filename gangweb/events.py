"""Live events for browsers: one function to publish, one group name to subscribe to.

Events are sent only after the surrounding database transaction commits, so a browser never sees
a plan or an eviction that was rolled back. Publishing never raises: the dashboard is a view of
the system, and its channel layer being down must not fail an eviction or an admission answer.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

DASHBOARD_GROUP = "gangweb.dashboard"
# The consumer method Channels calls for these messages ("gangweb.event" -> gangweb_event).
MESSAGE_TYPE = "gangweb.event"


def _send(event_type: str, payload: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": MESSAGE_TYPE, "event": event_type, "at": time.time(), "payload": payload}
    try:
        async_to_sync(layer.group_send)(DASHBOARD_GROUP, message)
    except Exception:
        logger.warning("could not publish event", extra={"event": event_type}, exc_info=True)


def publish(event_type: str, payload: dict[str, Any]) -> None:
    """Send ``payload`` to every subscribed browser once the current transaction commits."""
    transaction.on_commit(lambda: _send(event_type, payload))
