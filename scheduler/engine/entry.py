"""``plan()``: the one entry point from a snapshot and a PodGroup name to a ``Plan``."""

from __future__ import annotations

from .contract import Plan
from .errors import SnapshotError
from .evaluation import Problem
from .policies import DEFAULT_POLICY, policy_named
from .preemptor import Preemptor
from .snapshot import Snapshot


def _problem(snapshot: Snapshot, podgroup: str) -> Problem:
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError("plan() needs a Snapshot from load_snapshot() or parse_snapshot()")
    return Problem(snapshot, Preemptor(snapshot, podgroup))


def plan(snapshot: Snapshot, podgroup: str, policy: str = DEFAULT_POLICY) -> Plan:
    """What it takes to place PodGroup ``namespace/name`` now, under the named policy.

    Deterministic: the same snapshot, group and policy always give the same plan. Raises
    ``SnapshotError`` for an unknown group or policy.
    """
    chosen = policy_named(policy)
    return chosen.plan(_problem(snapshot, podgroup))
