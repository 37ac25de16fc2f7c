"""Which topology domains ``gangweb`` looks at first, and which it may skip.

Two whole-cluster numpy passes, no per-domain Python work: a lower bound on the highest victim
priority each domain needs (the lowest tier whose eviction could make room there), and the
cheapest lone victim unit that would free enough room (when one exists). Domains are visited by
that promise, so a few evaluated domains usually hold the best plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ...placement import fit_columns, topology_domains
from ...victims import NO_VICTIM_PRIORITY

if TYPE_CHECKING:
    from ...evaluation import Problem
    from ...preemptor import Domain


class TierBound(NamedTuple):
    """The lowest victim tier whose eviction could make enough room in a domain, and that room."""

    priority: int
    room: int


class VictimUnitEstimate(NamedTuple):
    """The cheapest single victim unit that frees enough room in a domain."""

    priority: int
    pods: int


UNREACHABLE = TierBound(np.iinfo(np.int64).max, 0)


def rank_domains(problem: Problem, domains: Sequence[Domain]) -> tuple[list[Domain], dict[int, int]]:
    """Domains that could succeed, most promising first, and each one's priority lower bound."""
    viable = problem.ordered_domains(problem.free_removed(), domains)
    if len(viable) <= 1:  # nothing to order, and no bound could prune the only domain
        return viable, {d.order: NO_VICTIM_PRIORITY for d in viable}
    bounds = dict(zip((d.order for d in viable), domain_bounds(problem, viable)))
    lone = single_unit_estimates(problem, viable)

    def promise(domain: Domain) -> tuple[int, int, int, int]:
        bound, unit = bounds[domain.order], lone.get(domain.order)
        if unit is not None:  # one unit would do: (its priority, one unit, its pods)
            return (max(bound.priority, unit.priority), 1, unit.pods, domain.order)
        return (bound.priority, 2, -bound.room, domain.order)

    viable.sort(key=promise)
    return viable, {order: bound.priority for order, bound in bounds.items()}


def domain_bounds(problem: Problem, domains: Sequence[Domain]) -> list[TierBound]:
    """Per domain: a lower bound on the highest victim priority any plan there needs (the lowest
    tier whose eviction could make enough room), and how much room that tier gives."""
    need = max(problem.gang.needed(), 1)
    bounds: list[TierBound | None] = [None] * len(domains)
    snap = problem.snapshot
    for level in [NO_VICTIM_PRIORITY] + problem.levels():
        free = (
            snap.free if level == NO_VICTIM_PRIORITY else snap.free + problem.units.released_below(level + 1)
        )
        for i, room in enumerate(problem.room(free, domains)):
            if bounds[i] is None and room >= need:
                bounds[i] = TierBound(level, room)
        if all(b is not None for b in bounds):
            break
    return [b if b is not None else UNREACHABLE for b in bounds]


def single_unit_estimates(problem: Problem, domains: Sequence[Domain]) -> dict[int, VictimUnitEstimate]:
    """Per domain (by order), the cheapest lone victim unit that frees enough slots there, as
    (priority, pods): a cheap, whole-cluster numpy estimate used to visit good domains first."""
    snap, index = problem.snapshot, problem.units
    pending = problem.gang.pending
    request = snap.pod_req[pending].max(axis=0)
    cols = fit_columns(request)
    if problem.gang.group.topology_key:
        values, node_domain = topology_domains(snap, problem.gang.group.topology_key)
        n_domains = len(values)
    else:
        node_domain, n_domains = np.zeros(len(snap.nodes), dtype=np.int64), 1
    wanted = np.zeros(n_domains + 1, dtype=bool)
    wanted[[d.order for d in domains]] = True
    in_domains = np.zeros(len(snap.nodes), dtype=bool)  # a domain may hold part of its value's nodes
    for d in domains:
        in_domains[d.nodes] = True
    usable = problem.gang.static_mask() & wanted[node_domain] & in_domains  # node_domain -1: the spare slot
    free_slots = np.where(usable, np.maximum(np.min(snap.free[:, cols] // request[cols], axis=1), 0), 0)
    domain_slots = np.bincount(node_domain[usable], weights=free_slots[usable], minlength=n_domains)
    entries = np.flatnonzero((index.entry_unit >= problem.first_eligible) & usable[index.entry_node])
    if not len(entries):
        return {}
    nodes, units = index.entry_node[entries], index.entry_unit[entries]
    after = np.maximum(
        np.min((snap.free[nodes] + index.entry_req[entries])[:, cols] // request[cols], axis=1), 0
    )
    pair = units * n_domains + node_domain[nodes]
    pairs, inverse = np.unique(pair, return_inverse=True)
    gains = np.bincount(inverse, weights=after - free_slots[nodes])
    pair_unit, pair_domain = pairs // n_domains, pairs % n_domains
    enough = gains >= np.maximum(len(pending) - domain_slots[pair_domain], 1)
    pair_unit, pair_domain = pair_unit[enough], pair_domain[enough]
    best = np.lexsort((index.unit_pods[pair_unit], index.priorities[pair_unit], pair_domain))
    out: dict[int, VictimUnitEstimate] = {}
    for position in best.tolist():
        domain = int(pair_domain[position])
        if domain not in out:
            unit = int(pair_unit[position])
            out[domain] = VictimUnitEstimate(int(index.priorities[unit]), int(index.unit_pods[unit]))
    return out
