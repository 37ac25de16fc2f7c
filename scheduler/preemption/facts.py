"""What the ledger is told about each victim: its own type, owned by neither planning nor the ledger
package (which needs Django), so the snapshot worker can plan without either."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VictimFacts:
    """A victim pod as the plan saw it: its UID (empty when the snapshot had none), node, GPUs, and when it
    started (seconds since the epoch; None when the snapshot did not say)."""

    uid: str = ""
    node: str = ""
    gpus: int = 0
    started: float | None = None
