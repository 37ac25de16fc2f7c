"""The causes of idle GPU time, one vocabulary for the live figure (``gangweb/dashboard/idle.py``, the API's
``idle/``) and ``gang replay`` (docs/idle.md "One figure").

- ``freeWhileWaiting``: free GPUs while a gang waits (fragmentation: room the waiting gangs cannot use);
- ``brokenGangs``: GPUs held by broken gangs (``scheduler.health``);
- ``allocatedIdle``: GPUs allocated to a pod that did no work over the window (``scheduler.activity``);
- ``heldForUnplaced``: GPUs held for a gang not placed yet (nominated for its pods, reserved for them by
  gangweb after a preemption made room, or bound to the members of a gang still short of ``minCount``).
"""

FREE_WHILE_WAITING = "freeWhileWaiting"
BROKEN_GANGS = "brokenGangs"
ALLOCATED_IDLE = "allocatedIdle"
HELD_FOR_UNPLACED = "heldForUnplaced"
CAUSES = (FREE_WHILE_WAITING, BROKEN_GANGS, ALLOCATED_IDLE, HELD_FOR_UNPLACED)


def gpu_hours(gpu_seconds: float) -> float:
    """GPU-seconds as the GPU-hours every figure shows (two decimals)."""
    return round(gpu_seconds / 3600, 2)
