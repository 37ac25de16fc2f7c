"""The queues of the queue managers that share a cluster (Kueue, Volcano, KAI-Scheduler, YuniKorn), read
from the same raw objects as the engine's snapshot: one ``Queue`` per system and queue, each figured by
that system's own arithmetic (docs/queues.md). Plain Python, like the engine it reads requests through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.engine.snapshot import Snapshot

from . import kai, kueue, volcano, yunikorn
from .cluster import ClusterView, build_view
from .model import RESOURCES, SYSTEMS, Figures, Pending, Queue, QueueModel

__all__ = ["RESOURCES", "SYSTEMS", "ClusterView", "Figures", "Pending", "Queue", "QueueModel", "read_queues"]

_READERS = (("kueue", kueue.read), ("volcano", volcano.read), ("kai", kai.read), ("yunikorn", yunikorn.read))


def read_queues(objects: Iterable[Mapping[str, Any]], snapshot: Snapshot) -> QueueModel:
    """Every queue found in ``objects`` (flattened raw objects; ``snapshot`` parsed from the same). A
    system none of whose objects is present costs one dictionary lookup. ValueError names a malformed
    object and field."""
    return read_view(build_view(objects, snapshot))


def read_view(view: ClusterView) -> QueueModel:
    model = QueueModel()
    for _, reader in _READERS:
        reader(view, model)
    return model
