"""What the ledger is told about each victim pod: the ledger's own input type, so that it depends on no
caller (planning and observe mode both hand it these)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PodFacts:
    """A victim pod as the plan saw it: its UID (empty when the snapshot had none), node and GPUs."""

    uid: str = ""
    node: str = ""
    gpus: int = 0
