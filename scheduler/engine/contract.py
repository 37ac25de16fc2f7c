"""The plan a policy returns, and its JSON form (docs/design.md ``gang plan`` contract).

Beside its one-line ``reason`` every plan carries a machine-readable ``outcome`` (like
kube-scheduler's Status codes): ``fits`` (feasible, nothing to evict), ``preempt`` (feasible once its
victims go) or ``infeasible:<why>`` with one of ``INFEASIBLE`` as the why. A feasible plan also says
whether it is proven the cheapest (``optimality``: ``proven`` or ``heuristic:<why>``, ``OPTIMALITY``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

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

FITS, PREEMPT = "fits", "preempt"
# The <why> of an "infeasible:<why>" outcome, in the order the checks run.
INFEASIBLE = {
    "too-few-pods": "no pending pods, and fewer running than minCount",
    "priority-mismatch": "a pending or running pod's own priority differs from its group's",
    "device-claim": "a ResourceClaim the PodGroup shares (KEP-5729) cannot be allocated",
    "no-usable-node": "too few pending pods pass the node filters (Ready, cordon, taints, selector, affinity) anywhere",
    "topology": "the topology constraint cannot be met (label missing, running pods outside it or split across values)",
    "never-preempts": "the group does not fit and its preemption policy is Never",
    "no-victims": "the group does not fit and no running pod has a lower priority",
    "no-room": "even with the victims the policy may take, fewer pods fit than the group needs",
}
# The whys a caller of the engine gives, beside the engine's own: ``scheduler/queues/plans.py`` plans clear of
# the units a queue manager placed and says so when only those could make room.
BESIDE_ENGINE = {
    "queue-owned": "only evicting units a queue manager (Kueue, Volcano, KAI, YuniKorn) placed would make room",
}

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "priority": self.priority,
            "pods": list(self.pods),
        }


@dataclass
class Plan:
    pod_group: str
    policy: str
    feasible: bool
    reason: str
    victims: list[Victim] = field(default_factory=list)
    placement: dict[str, str] = field(default_factory=dict)
    domain: str | None = None
    # Not part of the JSON contract: what the pipeline and dashboard want besides it.
    cost: Cost | tuple = ()  # a Cost from the engine; a plain tuple of the same order is ranked alike
    pending: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    why: str = ""  # for an infeasible plan, a key of INFEASIBLE
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
    def outcome(self) -> str:
        """``fits``, ``preempt`` or ``infeasible:<why>`` (``infeasible:unknown`` for a plan built
        outside the engine without a why)."""
        if self.feasible:
            return PREEMPT if self.victims else FITS
        return f"infeasible:{self.why or 'unknown'}"

    @property
    def rank(self) -> tuple:
        """Order among plans for the same group: feasible, most pods placed, cost, domain label."""
        return (not self.feasible, -len(self.placement), self.cost, self.domain or "")

    @property
    def cost_breakdown(self) -> dict[str, Any]:
        """The cost tuple with names (``highest_victim_priority`` is None without victims)."""
        out = dict(zip(Cost._fields, self.cost))
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
            "outcome": self.outcome,
            "optimality": self.optimality,
            "cost": self.cost_breakdown,
            "placedPods": len(self.placement),
            "pendingPods": self.pending,
            "evictedGpus": self.evicted_gpus,
            "lostGpuSeconds": self.lost_gpu_seconds,
            "victims": [
                {
                    "kind": v.kind,
                    "namespace": v.namespace,
                    "name": v.name,
                    "gpus": v.gpus,
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
            "podGroup": self.pod_group,
            "policy": self.policy,
            "feasible": feasible,
            "victims": [v.to_dict() for v in self.victims] if feasible else [],
            "evictions": self.evictions if feasible else [],
            "placement": dict(sorted(self.placement.items())) if feasible else {},
            "domain": self.domain,
            "reason": self.reason,
            "outcome": self.outcome,  # after the docs/design.md keys, which keep their order
            "optimality": self.optimality,
        }
