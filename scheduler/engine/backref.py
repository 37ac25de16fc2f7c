"""A snapshot's indexes refer back to it weakly, so a replaced snapshot is freed by reference counting.

``Snapshot.units`` (``victims.UnitIndex``) and ``Snapshot.devices`` (``devices.DeviceIndex``) read their
snapshot's arrays after they are built. A plain attribute back to the snapshot made every snapshot a
reference cycle, which only the cyclic garbage collector frees; a process that keeps its heap out of the
collector's sight (``heap.settle``, a watch cache's live snapshot) would then keep every replaced
snapshot forever. The index is only ever reached through its snapshot, so the snapshot outlives it.
"""

from __future__ import annotations

import weakref
from typing import Any


class SnapshotRef:
    """A ``snapshot`` attribute held by weak reference (a descriptor: ``snapshot = SnapshotRef()``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_ref"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        target = getattr(obj, self._slot)()
        if target is None:
            raise ReferenceError("the snapshot this index belongs to is gone")
        return target

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj, self._slot, weakref.ref(value))
