"""A process-local cache with expiry and a size bound, for review answers and guessing counts.

An entry expires as a whole (never refreshed in place); when the cache is full, the least recently used
entry goes, so a flood of new keys pushes old ones out one by one instead of emptying the cache.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any


class TTLCache:
    def __init__(self, max_entries: int) -> None:
        self._data: OrderedDict[Any, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries

    def get(self, key: Any) -> tuple[bool, Any]:
        """(True, value) while ``key`` is cached and fresh, else (False, None)."""
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return False, None
            if hit[0] < time.monotonic():
                del self._data[key]
                return False, None
            self._data.move_to_end(key)
            return True, hit[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        with self._lock:
            self._data[key] = (time.monotonic() + ttl, value)
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def pop(self, key: Any) -> None:
        with self._lock:
            self._data.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
