"""``plan()``: the one entry point from a snapshot and a gang key to a ``Plan``."""

from __future__ import annotations

from .allowance import Allowance
from .contract import Plan, Victim
from .errors import SnapshotError
from .evaluation import Problem
from .gangkey import GangKey
from .outcomes import Outcome
from .policies import DEFAULT_POLICY, PreemptionPolicy, policy_named
from .preemptor import Preemptor
from .snapshot import Snapshot

# How many times a plan that overdraws the lost-work budget is made again with one more unit spared.
MAX_BUDGET_ROUNDS = 16


def _problem(snapshot: Snapshot, gang_key: GangKey) -> Problem:
    if not isinstance(snapshot, Snapshot):
        raise SnapshotError("plan() needs a Snapshot from load_snapshot() or parse_snapshot()")
    gang = Preemptor(snapshot, gang_key)
    seen = snapshot.holding_for(gang.priority)
    return Problem(snapshot, gang) if seen is snapshot else Problem(seen, Preemptor(seen, gang_key))


def plan(snapshot: Snapshot, gang_key: GangKey, policy: str = DEFAULT_POLICY) -> Plan:
    """What it takes to place the gang ``gang_key`` (``NAMESPACE/NAME`` of its PodGroup) now, under the
    named policy.

    Deterministic: the same snapshot, group and policy always give the same plan. Raises
    ``SnapshotError`` for an unknown group or policy. A snapshot with a lost-work budget
    (``Snapshot.with_lost_work``) gets a plan within it, or one that waits for it.
    """
    chosen = policy_named(policy)
    result = chosen.plan(_problem(snapshot, gang_key))
    if snapshot.allowance is None or not result.feasible or not result.victims:
        return result
    return _within_allowance(snapshot, gang_key, chosen, result)


def _within_allowance(snapshot: Snapshot, gang_key: GangKey, chosen: PreemptionPolicy, result: Plan) -> Plan:
    """The plan again, sparing the units a lost-work pool cannot afford, until it fits every pool's
    allowance (``allowance.Allowance.overdrawn``); else a plan that waits for the budget.

    Units of a pool with nothing left are spared from the start when they would lose any work; then each
    round spares the largest loser of each pool the plan overdraws, so the cheapest affordable victims are
    chosen by the policy itself."""
    allowance = snapshot.allowance
    assert allowance is not None
    spared = {snapshot.pods[p].key for p in snapshot.protected}
    first_overdrawn = allowance.overdrawn(result.victims)
    if not first_overdrawn:
        return result
    for unit, lost in zip(snapshot.units.units, snapshot.units.gpu_seconds):
        if lost > 0:
            pods = [snapshot.pods[p].key for p in unit.pods]
            if any(allowance.left(pool) <= 0 for pool in allowance.pools_of(unit.namespace, pods)):
                spared.update(pods)
    current, overdrawn = result, first_overdrawn
    for _ in range(MAX_BUDGET_ROUNDS):
        for victims in overdrawn.values():
            spared.update(victims[0].pods)
        current = chosen.plan(_problem(snapshot.protecting(spared), gang_key))
        if not current.feasible:
            break
        overdrawn = allowance.overdrawn(current.victims)
        if not overdrawn:
            current.reason = (
                f"{current.reason}; within the lost-work budget ({_pools(first_overdrawn, allowance)} "
                "would have been overdrawn by the first choice)"
            )
            return current
    return Plan(
        gang_key=result.gang_key,
        policy=result.policy,
        feasible=False,
        reason=(
            f"waits for the lost-work budget: every plan that makes room for {gang_key} overdraws "
            f"{_pools(first_overdrawn, allowance)} (GPU-hours lost to preemption per rolling hour)"
        ),
        pending=result.pending,
        stats=dict(result.stats, lostWorkBudget=_budget_stats(first_overdrawn, allowance)),
        why=Outcome.LOST_WORK_BUDGET,
    )


def _pools(overdrawn: dict[str, list[Victim]], allowance: Allowance) -> str:
    return ", ".join(
        f"{pool} ({sum(v.lost_gpu_seconds for v in victims) / 3600:.2f} GPU-h wanted, "
        f"{max(allowance.left(pool), 0.0) / 3600:.2f} left)"
        for pool, victims in sorted(overdrawn.items())
    )


def _budget_stats(overdrawn: dict[str, list[Victim]], allowance: Allowance) -> list[dict[str, object]]:
    return [
        {
            "pool": pool,
            "wantedGpuSeconds": round(sum(v.lost_gpu_seconds for v in victims), 3),
            "leftGpuSeconds": round(max(allowance.left(pool), 0.0), 3),
        }
        for pool, victims in sorted(overdrawn.items())
    ]
