"""A plan's machine-readable outcome (docs/engine.md "Outcome codes"): one member per code, its value the
exact string the JSON, the API and the ledger carry, so code compares with a member and never a literal."""

from __future__ import annotations

from enum import StrEnum

INFEASIBLE = "infeasible"  # every infeasible code is "infeasible:<why>"; the ledger filter's word for all


class Outcome(StrEnum):
    FITS = "fits"  # feasible and nothing is evicted
    PREEMPT = "preempt"  # feasible once the plan's victims are evicted
    REAP = "reap"  # a reaper's plan: what is left of a broken gang, one unit (never the engine's)
    # Infeasible, in the order the checks run (a new code is one line here and a row in docs/engine.md).
    TOO_FEW_PODS = "infeasible:too-few-pods"  # no pending pods, and fewer running than minCount
    INVALID_GROUP = (
        "infeasible:invalid-group"  # kube-scheduler marked the PodGroup Invalid: no eviction helps
    )
    PRIORITY_MISMATCH = "infeasible:priority-mismatch"  # a pod's own priority differs from its group's
    DEVICE_CLAIM = "infeasible:device-claim"  # a ResourceClaim the PodGroup shares cannot be allocated
    NO_USABLE_NODE = "infeasible:no-usable-node"  # too few pending pods pass the node filters anywhere
    TOPOLOGY = "infeasible:topology"  # the topology constraint cannot be met
    NEVER_PREEMPTS = "infeasible:never-preempts"  # does not fit, and its preemption policy is Never
    NO_VICTIMS = "infeasible:no-victims"  # does not fit, and no running pod has a lower priority
    NO_ROOM = "infeasible:no-room"  # even with the victims the policy may take, too few pods fit
    LOST_WORK_BUDGET = "infeasible:lost-work-budget"  # every plan would overdraw a lost-work budget: it waits
    # Beside the engine: ``scheduler/queues/plans.py`` plans clear of the units a queue manager placed.
    QUEUE_OWNED = "infeasible:queue-owned"  # only units a queue manager placed would make room
    UNKNOWN = "infeasible:unknown"  # a plan built outside the engine without one; the engine never gives it

    @property
    def feasible(self) -> bool:
        return not self.startswith(f"{INFEASIBLE}:")


# The codes given beside the engine (the reaper, the queue-aware planning, a plan built without a why).
BESIDE_ENGINE = frozenset({Outcome.REAP, Outcome.QUEUE_OWNED, Outcome.UNKNOWN})
