"""The bounded window of past changes that watches replay (what etcd's compaction limits on a real cluster)."""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

from . import errors


@dataclass(frozen=True)
class Change:
    """One committed write, as a watch reports it."""

    resource_version: int
    storage: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict  # stored shape; shared, do not mutate
    previous: dict | None = None  # the object before a MODIFIED change


class WatchHistory:
    """Not thread-safe on its own: the store calls it under its lock."""

    def __init__(self, limit: int):
        self._changes: deque[Change] = deque()
        self._limit = limit
        self.oldest_watchable = 0  # a watch may start at any resourceVersion >= this

    def append(self, change: Change) -> None:
        self._changes.append(change)
        while len(self._changes) > self._limit:
            self.oldest_watchable = self._changes.popleft().resource_version

    def since(self, storage: str, resource_version: int) -> list[Change]:
        """Changes of one storage after ``resource_version``; 410 Gone when that is older than the window."""
        if resource_version < self.oldest_watchable:
            raise errors.gone(f"too old resource version: {resource_version} ({self.oldest_watchable})")
        start = len(self._changes)
        # ordered by resourceVersion: walk back to the first change after the start
        while start > 0 and self._changes[start - 1].resource_version > resource_version:
            start -= 1
        return [c for c in itertools.islice(self._changes, start, None) if c.storage == storage]

    def forget(self, up_to: int) -> None:
        self._changes.clear()
        self.oldest_watchable = up_to
