"""The pipeline's live events: where the ledger's messages start.

The pipeline says what happened (``publish("plan.created", {...})``) and it leaves by the seam
``scheduler.publishing.LEDGER``, whose publisher gangweb connects at startup (``gangweb.events.publish``,
sent once the surrounding transaction commits). The outbox handed in by ``connect_outbox`` writes the
notifications in the ledger row's transaction, and each event is handed to ``kubeevents.observe`` once
the transaction commits (most kinds make no Kubernetes Event).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from scheduler import publishing
from scheduler.preemption import kubeevents

Outbox = Callable[[str, dict[str, Any]], None]

_outbox: Outbox | None = None


def connect_outbox(outbox: Outbox | None) -> None:
    """Call ``outbox`` with each later event at once, inside the ledger's transaction, to write what must
    commit or roll back with it (the notifications' outbox, ``gangweb/notify/outbox.py``)."""
    global _outbox
    _outbox = outbox


def publish(event_type: str, payload: dict[str, Any]) -> None:
    """Hand one event to the outbox (now, in the transaction), the Kubernetes Events (after commit) and
    the seam's publisher (which decides when it is sent; a refusal never reaches the ledger write)."""
    if _outbox is not None:
        _outbox(event_type, payload)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: kubeevents.observe(event_type, payload))
    else:
        kubeevents.observe(event_type, payload)
    publishing.LEDGER.send(event_type, payload)
