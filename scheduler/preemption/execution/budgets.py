"""Checking a whole plan against the PodDisruptionBudgets, before its first real eviction.

Dry runs go pod by pod and never spend a budget, so two victims under one budget that allows one
disruption both pass their dry runs; the second real eviction would then be refused (429) and leave an
``all`` unit half-evicted. So the plan is checked as a whole: for every budget, the victims whose
eviction would take one of its disruptions (``spends_budget``, the Eviction API's own rule) are counted
against the budget's ``status.disruptionsAllowed``, read fresh.

No Django here: raw API objects in, shortfalls out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.cluster import KubeObject, object_key
from scheduler.kinds import is_native
from scheduler.kube.budgets import matching_budgets, spends_budget


@dataclass(frozen=True)
class Shortfall:
    """A budget the plan's victims would overdraw (or that the Eviction API cannot apply)."""

    budget: str  # namespace/name
    needed: int
    allowed: int
    pods: tuple[str, ...]
    why: str = ""

    def __str__(self) -> str:
        if self.why:
            return f"PodDisruptionBudget {self.budget}: {self.why} ({', '.join(self.pods)})"
        return (
            f"PodDisruptionBudget {self.budget} allows {self.allowed} disruption(s) now; the plan needs "
            f"{self.needed} ({', '.join(self.pods)})"
        )


def shortfalls(objects: Iterable[KubeObject], victims: Iterable[str]) -> list[Shortfall]:
    """Every budget that evicting all ``victims`` (pod keys) at once would break, in name order."""
    pods: dict[str, KubeObject] = {}
    budgets: list[KubeObject] = []
    for obj in objects:
        if is_native(obj, "Pod"):
            pods[object_key(obj)] = obj
        elif is_native(obj, "PodDisruptionBudget"):
            budgets.append(obj)
    if not budgets:
        return []
    spending: dict[str, list[str]] = defaultdict(list)
    by_key = {object_key(b): b for b in budgets}
    several: dict[str, list[str]] = defaultdict(list)
    for key in sorted(set(victims)):
        pod = pods.get(key)
        if pod is None:
            continue  # gone already: evicting it spends nothing
        matching = matching_budgets(pod, budgets)
        if len(matching) > 1:  # the Eviction API refuses such a pod outright (500)
            several[",".join(sorted(object_key(b) for b in matching))].append(key)
            continue
        for budget in matching:
            if spends_budget(pod, budget, budget.get("status") or {}):
                spending[object_key(budget)].append(key)
    found = [
        Shortfall(
            names,
            len(keys),
            0,
            tuple(keys),
            "more than one budget selects these pods, which the Eviction API refuses",
        )
        for names, keys in sorted(several.items())
    ]
    for name in sorted(spending):
        budget, keys = by_key[name], spending[name]
        status = budget.get("status") or {}
        meta = budget.get("metadata") or {}
        if "observedGeneration" in status and status["observedGeneration"] < meta.get("generation", 1):
            found.append(
                Shortfall(
                    name,
                    len(keys),
                    0,
                    tuple(keys),
                    "its status is not yet computed for the "
                    "current spec (the Eviction API refuses until it is)",
                )
            )
            continue
        allowed = int(status.get("disruptionsAllowed", 0))
        if len(keys) > allowed:
            found.append(Shortfall(name, len(keys), allowed, tuple(keys)))
    return found
