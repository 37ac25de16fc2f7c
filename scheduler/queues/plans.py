"""Plans that never fight a queue manager: the units Kueue, Volcano, KAI or YuniKorn placed are no victims of
gangweb's plans, unless a system is allowed (``managers.ACTS``, setting ``GANGWEB_QUEUE_VICTIMS``). A plan that only such units could make room for ends
``infeasible:queue-owned``, naming the system, the object and what that system would have to do.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.engine import Plan, Snapshot, plan
from scheduler.engine.gangkey import GangKey
from scheduler.engine.outcomes import Outcome

from .ownership import Owner


def plan_beside_queues(
    snapshot: Snapshot,
    gang_key: GangKey,
    policy: str,
    owners: Mapping[str, Owner],
    allowed: frozenset[str] = frozenset(),
) -> Plan:
    """The engine's plan with the queue-owned units out of reach (``allowed`` systems' excepted)."""
    protected = {key: owner for key, owner in owners.items() if owner.system not in allowed}
    if not protected:
        return plan(snapshot, gang_key, policy)
    guarded = plan(snapshot.protecting(protected), gang_key, policy)
    if guarded.feasible or guarded.why not in (Outcome.NO_VICTIMS, Outcome.NO_ROOM):
        return guarded
    free = plan(snapshot, gang_key, policy)
    if not free.feasible:
        return guarded
    taken: dict[str, Owner] = {}
    for victim in free.victims:
        for pod in victim.pods:
            if pod in protected:
                taken.setdefault(protected[pod].object, protected[pod])
    if not taken:
        return guarded
    systems = sorted({o.system for o in taken.values()})
    actions = "; ".join(o.action for o in sorted(taken.values(), key=lambda o: o.object))
    reason = (
        f"only units {', '.join(systems)} placed could make room for {gang_key} "
        f"({', '.join(sorted(taken))}): {actions}"
    )
    return Plan(
        gang_key=guarded.gang_key,
        policy=guarded.policy,
        feasible=False,
        reason=reason,
        pending=guarded.pending,
        stats=dict(guarded.stats, queueOwned=sorted(taken)),
        why=Outcome.QUEUE_OWNED,
    )
