"""The plan a policy returns, and its JSON form (docs/design.md ``gang plan`` contract).

Beside its one-line ``reason`` every plan carries a machine-readable ``outcome`` (like
kube-scheduler's Status codes): a member of ``outcomes.Outcome``. A feasible plan also says
whether it is proven the cheapest (``optimality``: ``proven`` or ``heuristic:<why>``, ``OPTIMALITY``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .gangkey import GangKey
from .outcomes import Outcome

NO_VICTIM_PRIORITY = -(2**63)  # the highest victim priority of a plan without victims: below every priority


class Cost(NamedTuple):
    """docs/design.md cost order, cheapest first when compared as a tuple."""

    pdb_violations: int
    highest_victim_priority: int
    victim_priority_sum: int
    victim_units: int
    evicted_pods: int
    lost_gpu_seconds: float


NO_VICTIM_COST = Cost(0, NO_VICTIM_PRIORITY, 0, 0, 0, 0.0)

# A feasible plan's ``optimality``: proven the cheapest by docs/design.md's cost order, or the heuristic's.
PROVEN = "proven"
POLICY, BOUND, BUDGET, PARTIAL, UNMODELLED = (
    f"heuristic:{why}" for why in ("policy", "bound", "budget", "partial", "unmodelled")
)
OPTIMALITY = {
    PROVEN: "no plan placing as many pods is cheaper: nothing is evicted, or gangweb's exact search proved it",
    POLICY: "the policy does not search exactly (kep5710, legacy)",
    BOUND: "a topology domain held more units that could belong to a cheaper plan than the exact search takes",
    BUDGET: "the exact search ran out of its steps before it could prove the plan the cheapest",
    PARTIAL: "the plan places fewer than all pending pods; the exact search proves only plans that place all",
    UNMODELLED: (
        "the problem has what the exact search does not model: pending pods of different shapes, host ports, "
        "negative priorities, a pod under two disruption budgets, units evicted first for the group's claims"
    ),
}


@dataclass
class Victim:
    kind: str
    namespace: str
    name: str
    priority: int
    pods: list[str]
    gpus: int = 0
    lost_gpu_seconds: float = 0.0
    pdb_violations: int = 0
    # Its tier and how long it has run (since its earliest pod started, at the snapshot's time): what an
    # operator weighs before approving, kept in the ledger beside the contract JSON, not in it.
    priority_class: str | None = None
    running_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "priority": self.priority,
            "pods": list(self.pods),
            "lostGpuSeconds": self.lost_gpu_seconds,
        }


@dataclass
class Plan:
    gang_key: GangKey  # the preemptor's; ``podGroup`` in the JSON
    policy: str
    feasible: bool
    reason: str
    victims: list[Victim] = field(default_factory=list)
    placement: dict[str, str] = field(default_factory=dict)
    domain: str | None = None
    # Not part of the JSON contract: what the pipeline and dashboard want besides it.
    cost: (
        Cost | tuple[float, ...]
    ) = ()  # a Cost from the engine; a plain tuple of the same order is ranked alike
    pending: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    why: Outcome | None = None  # for an infeasible plan, its infeasible Outcome
    preemptor_priority: int | None = None  # the gang's effective priority, the rule's one side
    searched: str = ""  # what an exact search concluded (a key of OPTIMALITY); "" when none ran

    @property
    def optimality(self) -> str | None:
        """``proven`` or ``heuristic:<why>`` (``OPTIMALITY``) for a feasible plan; None for an infeasible one."""
        if not self.feasible:
            return None
        if not self.victims:
            return PROVEN
        return self.searched or POLICY

    @property
    def outcome(self) -> Outcome:
        """``fits``, ``preempt`` or the plan's infeasible code (``infeasible:unknown`` for a plan built
        outside the engine without a why)."""
        if self.feasible:
            return Outcome.PREEMPT if self.victims else Outcome.FITS
        return self.why or Outcome.UNKNOWN

    @property
    def rank(self) -> tuple[bool, int, Cost | tuple[float, ...], str]:
        """Order among plans for the same group: feasible, most pods placed, cost, domain label."""
        return (not self.feasible, -len(self.placement), self.cost, self.domain or "")

    @property
    def cost_breakdown(self) -> dict[str, Any]:
        """The cost tuple with names (``highest_victim_priority`` is None without victims)."""
        out: dict[str, Any] = dict(zip(Cost._fields, self.cost))
        if not self.victims:
            out["highest_victim_priority"] = None
        return out

    @property
    def evictions(self) -> list[str]:
        return sorted(pod for victim in self.victims for pod in victim.pods)

    @property
    def evicted_gpus(self) -> int:
        return sum(v.gpus for v in self.victims)

    @property
    def lost_gpu_seconds(self) -> float:
        return round(sum(v.lost_gpu_seconds for v in self.victims), 3)

    @property
    def pdb_violations(self) -> int:
        return sum(v.pdb_violations for v in self.victims)

    def details(self) -> dict[str, Any]:
        """What the contract JSON leaves out, for the ledger and the dashboard (camelCase like it)."""
        return {
            "outcome": self.outcome.value,
            "optimality": self.optimality,
            "cost": self.cost_breakdown,
            "placedPods": len(self.placement),
            "pendingPods": self.pending,
            "evictedGpus": self.evicted_gpus,
            "lostGpuSeconds": self.lost_gpu_seconds,
            "preemptorPriority": self.preemptor_priority,
            "victims": [
                {
                    "kind": v.kind,
                    "namespace": v.namespace,
                    "name": v.name,
                    "priority": v.priority,
                    "priorityClass": v.priority_class,
                    "pods": len(v.pods),
                    "gpus": v.gpus,
                    "runningSeconds": v.running_seconds,
                    "lostGpuSeconds": v.lost_gpu_seconds,
                    "pdbViolations": v.pdb_violations,
                }
                for v in self.victims
            ],
            "stats": dict(self.stats),
        }

    def to_dict(self) -> dict[str, Any]:
        feasible = bool(self.feasible)
        return {
            "podGroup": self.gang_key,
            "policy": self.policy,
            "feasible": feasible,
            "victims": [v.to_dict() for v in self.victims] if feasible else [],
            "evictions": self.evictions if feasible else [],
            "placement": dict(sorted(self.placement.items())) if feasible else {},
            "domain": self.domain,
            "reason": self.reason,
            "outcome": self.outcome.value,  # after the docs/design.md keys, which keep their order
            "optimality": self.optimality,
        }
