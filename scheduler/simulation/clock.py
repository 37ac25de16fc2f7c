"""Where the simulated cluster's timestamps come from.

The simulation's dynamics count ticks (a gang runs so many ticks, waits at most so many), so they are
the same for a seed whatever the clock. The clock only dates objects: ``WallClock`` for a cluster that
lives beside real components (the pipeline's grace periods, the ledger, the engine's lost GPU-seconds
all read wall time), ``SteppedClock`` for byte-identical snapshots in tests.
"""

from __future__ import annotations

import time

# 2026-01-05T08:00:00Z: a fixed start, so a seed gives identical objects.
FIXED_EPOCH = 1_767_600_000.0


class WallClock:
    def __init__(self, seconds_per_tick: float = 2.0) -> None:
        # Used only to back-date what was already running when the simulation starts.
        self.seconds_per_tick = seconds_per_tick

    def start(self) -> float:
        return float(int(time.time()))

    def advance(self, now: float) -> float:
        return max(now, time.time())


class SteppedClock:
    def __init__(self, start: float = FIXED_EPOCH, seconds_per_tick: float = 60.0) -> None:
        self._start = start
        self.seconds_per_tick = seconds_per_tick

    def start(self) -> float:
        return self._start

    def advance(self, now: float) -> float:
        return now + self.seconds_per_tick
