"""Preemption policies, chosen by name (``POLICIES``)."""

from __future__ import annotations

from .base import PreemptionPolicy
from .gangweb import GangwebPolicy
from .kep5710 import Kep5710Policy
from .legacy import LegacyPolicy

POLICIES: dict[str, PreemptionPolicy] = {p.name: p for p in (GangwebPolicy(), Kep5710Policy(), LegacyPolicy())}
DEFAULT_POLICY = "gangweb"

__all__ = ["POLICIES", "DEFAULT_POLICY", "PreemptionPolicy"]
