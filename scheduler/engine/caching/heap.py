"""Keeping a long-lived cache out of the cyclic garbage collector's sight (``HeapSettler``).

A worker's watch cache and live snapshot hold millions of objects at 20,000 nodes, none of them cyclic
garbage (JSON dicts and typed objects hold no cycles; a snapshot's indexes refer back to it weakly,
``backref.py``), yet every full collection walks them all, with the GIL held. So they are frozen
(``gc.freeze``: still freed by reference counting when a watch event replaces them, never walked again).

``settle()`` runs as each index of a live snapshot is built, the collector still paused
(``LiveSnapshot.keep_indexed(settle_heap=True)``). Its first call collects everything and freezes what is
left; later calls freeze what was made since without collecting it (constant time). Garbage frozen that
way stays out of reach until the next full settle, which comes once the heap has grown by ``growth`` (a
quarter: the share of new objects after which CPython itself runs a full collection), so memory stays
bounded by the same rule as without freezing. The heap is measured in the allocator's blocks
(``sys.getallocatedblocks``, under a millisecond), not in frozen objects: ``gc.get_freeze_count`` walks
them all, GIL held (0.05 s for a 20,000-node snapshot alone, most of a second in a worker's full cache).
docs/kube.md ("The heap") has the figures.
"""

from __future__ import annotations

import gc
import sys
import threading
import time

FULL, YOUNG = "full", "young"


class HeapSettler:
    def __init__(self, growth: float = 0.25, check_seconds: float = 60.0) -> None:
        self.growth, self.check_seconds = growth, check_seconds
        self.base: int | None = None  # the allocator's blocks in use after the last full settle
        self.full_settles = 0
        self._checked = 0.0  # when the frozen heap was last counted (monotonic)
        self._lock = threading.Lock()

    def settle(self) -> str:
        """``FULL`` (the first time, and once the frozen heap grew by ``growth``): collect everything and
        freeze what is left; else ``YOUNG``: freeze what is not frozen yet."""
        with self._lock:
            if self.base is not None:
                gc.freeze()
                if not self._grown():
                    return YOUNG
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.base = sys.getallocatedblocks()
            self._checked = time.monotonic()
            self.full_settles += 1
            return FULL

    def _grown(self) -> bool:
        now = time.monotonic()
        if now - self._checked < self.check_seconds:
            return False
        self._checked = now
        return sys.getallocatedblocks() > (self.base or 0) * (1 + self.growth)
