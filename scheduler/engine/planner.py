"""``plan()``: the one entry point from a snapshot and a PodGroup name to a ``Plan``."""

from __future__ import annotations

from .errors import SnapshotError
from .evaluation import Problem
from .gang import Gang
from .plan import Plan
from .policies import DEFAULT_POLICY, POLICIES
from .snapshot import Snapshot


def plan(snapshot: Snapshot, podgroup: str, policy: str = DEFAULT_POLICY) -> Plan:
    """What it takes to place PodGroup ``namespace/name`` now, under the named policy.

    Deterministic: the same snapshot, group and policy always give the same plan. Raises
    ``SnapshotError`` for an unknown group or policy.
    """
    chosen = POLICIES.get(policy)
    if chosen is None:
        raise SnapshotError(f"unknown policy {policy!r}; choose one of: {', '.join(sorted(POLICIES))}")
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError("plan() needs a Snapshot from load_snapshot() or parse_snapshot()")
    return chosen.plan(Problem(snapshot, Gang(snapshot, podgroup)))
