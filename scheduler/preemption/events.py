"""The pipeline's live events, carried by a publisher handed in at startup.

The pipeline says what happened (``publish("plan.created", {...})``); carrying it to browsers is the
Django project's job, so nothing here imports it: ``gangweb``'s ``AppConfig.ready()`` calls
``connect(gangweb.events.publish)``, which sends once the surrounding transaction commits and never
raises. Until something is connected (a process that set up Django without the ``gangweb`` app),
events are dropped, with one warning per process saying so.

This is also the one place the ledger's other messages start: the outbox handed in beside the publisher
writes the notifications in the ledger row's transaction, and each event is handed to
``kubeevents.observe`` once the transaction commits (most kinds make no Kubernetes Event).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from scheduler.preemption import kubeevents

logger = logging.getLogger(__name__)

Publish = Callable[[str, dict[str, Any]], None]

_publisher: Publish | None = None
_outbox: Publish | None = None
_warned = False


def connect(publisher: Publish | None, outbox: Publish | None = None) -> None:
    """Send every later event through ``publisher`` (None: drop them again); ``outbox`` is called with
    each at once, inside the ledger's transaction, to write what must commit or roll back with it (the
    notifications' outbox, ``gangweb/notify/outbox.py``)."""
    global _publisher, _outbox, _warned
    _publisher, _outbox, _warned = publisher, outbox, False


def publish(event_type: str, payload: dict[str, Any]) -> None:
    """Hand one event to the outbox (now, in the transaction), the Kubernetes Events (after commit) and
    the connected publisher (which decides when it is sent; it must not raise)."""
    if _outbox is not None:
        _outbox(event_type, payload)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: kubeevents.observe(event_type, payload))
    else:
        kubeevents.observe(event_type, payload)
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
