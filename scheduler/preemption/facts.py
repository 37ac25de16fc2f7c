"""What the ledger is told about each victim pod: its own input type, apart from planning and from the
ledger package (which needs Django), so that the snapshot worker can plan without either."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PodFacts:
    """A victim pod as the plan saw it: its UID (empty when the snapshot had none), node, GPUs, and when it
    started (seconds since the epoch; None when the snapshot did not say)."""

    uid: str = ""
    node: str = ""
    gpus: int = 0
    started: float | None = None
