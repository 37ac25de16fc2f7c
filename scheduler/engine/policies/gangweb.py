"""``gangweb`` (default): several placements per domain, domains independent, cheapest plan wins.

Candidates: the ``kep5710`` plan itself (so gangweb is never worse by construction), and in every
promising domain a kube-like least-allocated placement and a cost-aware placement, each followed by
reprieval. Ranking (DESIGN.md): most pods placed, then (PDB violations, highest victim priority,
sum of victim priorities, victim units, evicted pods, lost GPU-seconds), then domain order.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..costaware import CostAwarePlacer
from ..evaluation import Candidate, Problem
from ..gang import Domain
from ..placement import fit_columns, topology_domains
from ..parallel import evaluate_domains
from ..plan import Plan
from ..unitfill import unit_fill_placement
from ..victims import NO_VICTIM_PRIORITY
from .base import PreemptionPolicy
from .explain import describe_choice, describe_infeasible
from .kep5710 import kep5710_candidate

MAX_DOMAINS = 64  # domains evaluated per plan at most, most promising first


def evaluate_domain(problem: Problem, domain: Domain) -> list[Candidate]:
    """All candidate plans this policy considers inside one domain."""
    out = []
    kube_like = problem.place(domain, problem.free_removed(), removed_all=True)
    if kube_like:
        out.append(problem.candidate(domain, kube_like, problem.reprieve(kube_like),
                                     "least-allocated placement, greedy reprieval"))
    filled = unit_fill_placement(problem, domain)
    if filled:
        out.append(problem.candidate(domain, filled, problem.reprieve(filled), "unit-fill placement, greedy reprieval"))
    assignments, evicted = CostAwarePlacer(problem, domain).place()
    if assignments:
        out.append(problem.candidate(domain, assignments, problem.reprieve(assignments),
                                     "cost-aware placement, greedy reprieval"))
        out.append(problem.candidate(domain, assignments, evicted, "cost-aware placement"))
    return out


def domain_bounds(problem: Problem, domains: Sequence[Domain]) -> list[tuple[int, int]]:
    """Per domain: a lower bound on the highest victim priority any plan there needs (the lowest
    tier whose eviction could make enough room), and how much room that tier gives."""
    need = max(problem.gang.needed(), 1)
    bounds: list = [None] * len(domains)
    snap = problem.snapshot
    for level in [NO_VICTIM_PRIORITY] + problem.levels():
        free = snap.free if level == NO_VICTIM_PRIORITY else snap.free + problem.units.released_below(level + 1)
        for i, room in enumerate(problem.room(free, domains)):
            if bounds[i] is None and room >= need:
                bounds[i] = (level, room)
        if all(b is not None for b in bounds):
            break
    return [b if b is not None else (np.iinfo(np.int64).max, 0) for b in bounds]


def single_unit_estimates(problem: Problem, domains: Sequence[Domain]) -> dict[int, tuple[int, int]]:
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
    usable = problem.gang.static_mask() & wanted[node_domain]  # node_domain -1 hits the spare slot
    free_slots = np.where(usable, np.maximum(np.min(snap.free[:, cols] // request[cols], axis=1), 0), 0)
    domain_slots = np.bincount(node_domain[usable], weights=free_slots[usable], minlength=n_domains)
    entries = np.flatnonzero((index.entry_unit >= problem.first_eligible) & usable[index.entry_node])
    if not len(entries):
        return {}
    nodes, units = index.entry_node[entries], index.entry_unit[entries]
    after = np.maximum(np.min((snap.free[nodes] + index.entry_req[entries])[:, cols] // request[cols], axis=1), 0)
    pair = units * n_domains + node_domain[nodes]
    pairs, inverse = np.unique(pair, return_inverse=True)
    gains = np.bincount(inverse, weights=after - free_slots[nodes])
    pair_unit, pair_domain = pairs // n_domains, pairs % n_domains
    enough = gains >= np.maximum(len(pending) - domain_slots[pair_domain], 1)
    pair_unit, pair_domain = pair_unit[enough], pair_domain[enough]
    best = np.lexsort((index.unit_pods[pair_unit], index.priorities[pair_unit], pair_domain))
    out: dict[int, tuple[int, int]] = {}
    for position in best.tolist():
        domain = int(pair_domain[position])
        if domain not in out:
            unit = int(pair_unit[position])
            out[domain] = (int(index.priorities[unit]), int(index.unit_pods[unit]))
    return out


class GangwebPolicy(PreemptionPolicy):
    name = "gangweb"
    summary = "cheapest of several placements per topology domain; never worse than kep5710"

    def preempt(self, problem: Problem, domains: Sequence[Domain]) -> Plan:
        kep, kep_most = kep5710_candidate(problem, domains)
        candidates = [kep] if kep is not None else []
        viable = problem.ordered_domains(problem.free_removed(), domains)
        bounds = dict(zip((d.order for d in viable), domain_bounds(problem, viable)))
        lone = single_unit_estimates(problem, viable)

        def promise(domain: Domain) -> tuple:
            level, room = bounds[domain.order]
            if domain.order in lone:  # one unit would do: (its priority, one unit, its pods)
                return (max(level, lone[domain.order][0]), 1, lone[domain.order][1], domain.order)
            return (level, 2, -room, domain.order)

        viable.sort(key=promise)
        viable = viable[:MAX_DOMAINS]
        found, evaluated = evaluate_domains(problem, viable, {k: b[0] for k, b in bounds.items()}, seed=kep)
        candidates += found
        workable = [c for c in candidates if problem.gang.succeeds(c.placed)]
        if not workable:
            return problem.plan(self.name, False, describe_infeasible(problem, kep_most))
        best = min(workable, key=Candidate.rank)
        how = f"{best.how}; cheapest of {len(workable)} candidate plan(s) over {evaluated} domain(s)"
        if kep is not None and best is not kep and best.rank() < kep.rank():
            how += f" (kep5710 would evict {len(kep.victims)} unit(s), highest priority {kep.cost[1]})"
        return problem.plan(self.name, True, describe_choice(problem, best, how), best)
