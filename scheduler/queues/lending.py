"""Who lends what a queue borrows: no system reports ``lent``, so it is derived here, one rule for all.

Within one group of siblings (a Kueue Cohort's members, the children of a Volcano/KAI/YuniKorn parent),
for one resource: what the borrowers borrow came first from what the other members leave unused of what
they offer the group, then from the group's own pool (a Cohort's own quota, capacity nobody is
guaranteed), then from above the group. Each lender gives in proportion to what it leaves unused, so
Σ lent + pool lent + borrowed from above = Σ borrowed, exactly (Fractions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from .model import RESOURCES, Amount, Queue, QueueModel


@dataclass(frozen=True)
class Lending:
    lent: dict[str, Fraction]  # member -> lent to its siblings
    pool: Fraction  # lent out of the group's own pool
    from_above: Fraction  # borrowed beyond everything the group holds


def share_out(borrowed: Mapping[str, Amount], unused: Mapping[str, Amount], pool: Amount = 0) -> Lending:
    """``borrowed``: per member, what it uses beyond its own guarantee; ``unused``: per member, what it
    offers the group and does not use; ``pool``: the group's own unused capacity."""
    demand = Fraction(sum(borrowed.values(), 0))
    supply = Fraction(sum((u for u in unused.values() if u > 0), 0)) + max(Fraction(pool), Fraction(0))
    if not demand or not supply:
        return Lending({m: Fraction(0) for m in unused}, Fraction(0), demand)
    part = min(Fraction(1), demand / supply)
    lent = {m: (Fraction(u) * part if u > 0 else Fraction(0)) for m, u in unused.items()}
    pool_lent = max(Fraction(pool), Fraction(0)) * part
    return Lending(lent, pool_lent, demand - sum(lent.values(), Fraction(0)) - pool_lent)


def lend_among_siblings(
    queues: Mapping[str, Queue], model: QueueModel, system: str, total: Mapping[str, Amount]
) -> None:
    """Lent among siblings: a member's unused guarantee, the parent's (or the cluster's) unguaranteed rest."""
    by_parent: dict[str, list[Queue]] = {}
    for queue in queues.values():
        by_parent.setdefault(queue.parent or "", []).append(queue)
    for parent, members in by_parent.items():
        totals = {}
        for r in RESOURCES:
            borrowed = {q.name: q.figures(r).borrowed for q in members}
            unused = {
                q.name: max(Fraction(0), Fraction(q.figures(r).guaranteed) - q.figures(r).used)
                for q in members
            }
            above = queues[parent].figures(r).guaranteed if parent in queues else total.get(r, 0)
            pool = max(
                Fraction(0),
                Fraction(above) - sum((Fraction(q.figures(r).guaranteed) for q in members), Fraction(0)),
            )
            lending = share_out(borrowed, unused, pool)
            for name, lent in lending.lent.items():
                queues[name].figures(r).lent = lent
            totals[r] = {
                "borrowed": sum(borrowed.values(), Fraction(0)),
                "lent": sum(lending.lent.values(), Fraction(0)),
                "pool": lending.pool,
                "fromAbove": lending.from_above,
            }
        model.pools[(system, parent)] = totals
