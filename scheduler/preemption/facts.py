"""What the ledger is told about each victim pod: its own input type, apart from planning and from the
ledger package (which needs Django), so that the snapshot worker can plan without either."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PodFacts:
    """A victim pod as the plan saw it: its UID (empty when the snapshot had none), node and GPUs."""

    uid: str = ""
    node: str = ""
    gpus: int = 0
