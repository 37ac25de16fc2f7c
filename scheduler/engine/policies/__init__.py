"""Preemption policies, chosen by name (``POLICIES``)."""

from __future__ import annotations

from ..errors import SnapshotError
from .base import PreemptionPolicy
from .gangweb import GangwebPolicy
from .kep5710 import Kep5710Policy
from .legacy import LegacyPolicy

# In the order the benchmark and the quality study list them: kube-scheduler's beta, the default, the comparison.
POLICIES: dict[str, PreemptionPolicy] = {
    p.name: p for p in (Kep5710Policy(), GangwebPolicy(), LegacyPolicy())
}
DEFAULT_POLICY = GangwebPolicy.name


def policy_named(name: str) -> PreemptionPolicy:
    """The registered policy of that name; ``SnapshotError`` naming the choices otherwise."""
    chosen = POLICIES.get(name)
    if chosen is None:
        raise SnapshotError(f"unknown policy {name!r}; choose one of: {', '.join(sorted(POLICIES))}")
    return chosen


__all__ = ["DEFAULT_POLICY", "POLICIES", "PreemptionPolicy", "policy_named"]
