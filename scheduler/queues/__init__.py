"""The queues of the queue managers that share a cluster (Kueue, Volcano, KAI-Scheduler, YuniKorn), read
from the same raw objects as the engine's snapshot: one ``Queue`` per system and queue, each figured by
that system's own arithmetic (docs/queues.md). Plain Python, like the engine it reads requests through.
Imports lazily: the settings read ``managers`` without loading the readers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.engine.snapshot import Snapshot

    from .model import QueueModel

__all__ = ["queues_from", "read_queues"]


def read_queues(objects: Iterable[Mapping[str, Any]], snapshot: Snapshot) -> QueueModel:
    """Every queue found in ``objects`` (flattened raw objects; ``snapshot`` parsed from the same). A
    system none of whose objects is present costs one dictionary lookup. ValueError names a malformed
    object and field."""
    from .cluster import build_reading

    return queues_from(build_reading(objects, snapshot))


def queues_from(reading) -> QueueModel:
    from . import kai, kueue, volcano, yunikorn
    from .model import QueueModel

    model = QueueModel()
    for reader in (kueue.read, volcano.read, kai.read, yunikorn.read):
        reader(reading, model)
    return model
