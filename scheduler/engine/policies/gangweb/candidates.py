"""The candidate plans ``gangweb`` builds inside one topology domain, and the local search around the winner.

In a domain: a kube-like least-allocated placement, a unit-fill placement (``unitfill.py``) and a
cost-aware placement (``costaware.py``), each followed by reprieval (kube-scheduler's PDB-first
order and, when the snapshot has PDBs, plain importance order too); the cost-aware placement's own
victim set is a candidate as well.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...evaluation import Candidate, Problem
from ...placement import least_allocated_scores, place_least_allocated, tightest_fit_scores
from ...preemptor import Domain
from .costaware import CostAwarePlacer
from .unitfill import unit_fill_placement

SEARCH_ROUNDS, SEARCH_VICTIMS = 3, 4  # local search: rounds, and victims tried per round
SEARCH_NODE_BUDGET = 4096  # ...only while rounds x victims x domain nodes stays under this
REPACKED = 6  # then the cheapest plans seen get ``repack``ed (those of at most MAX_REPACK_VICTIMS units)
MAX_REPACK_VICTIMS = 4


def evaluate_domain(problem: Problem, domain: Domain) -> list[Candidate]:
    """All candidate plans this policy considers inside one domain."""
    out = []
    orders = (True, False) if problem.units.pod_pdbs else (True,)

    def reprieved(assignments: list[tuple[int, int]], how: str) -> None:
        for pdb_first in orders:
            label = how if pdb_first else f"{how} (importance order)"
            out.append(
                problem.candidate(domain, assignments, problem.reprieve(assignments, pdb_first), label)
            )

    kube_like = problem.place(domain, problem.free_removed(), removed_all=True)
    if kube_like:
        reprieved(kube_like, "least-allocated placement, greedy reprieval")
    filled = unit_fill_placement(problem, domain)
    if filled:
        reprieved(filled, "unit-fill placement, greedy reprieval")
    assignments, evicted = CostAwarePlacer(problem, domain).place()
    if assignments:
        reprieved(assignments, "cost-aware placement, greedy reprieval")
        out.append(problem.candidate(domain, assignments, evicted, "cost-aware placement"))
    return out


def improve(problem: Problem, best: Candidate, pool: Sequence[Candidate] = ()) -> Candidate:
    """Local search around the winner: forbid one of its victims (most important first) and plan
    that domain again; keep any cheaper plan. Greedy placements are myopic (a pod takes the cheap
    node that a later pod needed too); this repairs the common cases on small domains."""
    if not best.victims or SEARCH_ROUNDS * SEARCH_VICTIMS * len(best.domain.nodes) > SEARCH_NODE_BUDGET:
        return best
    # The winner's domain only, like the local search: a fan-out shard holding it repacks the same plans.
    seen = [c for c in pool if c.domain.order == best.domain.order and problem.gang.succeeds(c.placed)]
    spared: frozenset[int] = frozenset()
    for _ in range(SEARCH_ROUNDS):
        improved = False
        for unit_id in sorted(best.victims)[:SEARCH_VICTIMS]:
            variant = problem.sparing(spared | {unit_id})
            for candidate in evaluate_domain(variant, best.domain):
                if problem.gang.succeeds(candidate.placed):
                    seen.append(candidate)
                if problem.gang.succeeds(candidate.placed) and candidate.rank() < best.rank():
                    best, improved = candidate, True
                    best.how += " improved by local search"
                    spared = spared | {unit_id}
        if not improved:
            break
    # Then the cheapest few plans seen, victims given back with the gang placed anew each time.
    distinct: dict[tuple[int, tuple[int, ...]], Candidate] = {}
    for candidate in sorted(seen + [best], key=Candidate.rank):
        distinct.setdefault((candidate.domain.order, tuple(candidate.victims)), candidate)
    for candidate in list(distinct.values())[:REPACKED]:
        if not candidate.victims or tuple(best.cost)[:5] <= _repack_floor(problem, candidate):
            continue  # no subset of its victims can beat the best plan
        if SEARCH_ROUNDS * SEARCH_VICTIMS * len(candidate.domain.nodes) <= SEARCH_NODE_BUDGET:
            repacked = repack(problem, candidate)
            if repacked.rank() < best.rank():
                best = repacked
    return best


def repack(problem: Problem, found: Candidate) -> Candidate:
    """Give victims back one at a time, most important first, placing the whole gang anew each time
    (least-allocated, then tightest fit): reprieval keeps its placement fixed, so a victim that another
    placement would spare stays evicted (a greedy pod took a node by evicting a cheap unit that a later
    eviction made needless). Small domains only, like the local search; not with host ports."""
    if len(found.victims) < 2 or len(found.victims) > MAX_REPACK_VICTIMS or problem.has_ports:
        return found
    snap, gang, units = problem.snapshot, problem.gang, problem.units.units
    domain, current = found.domain, found
    for unit_id in sorted(found.victims):
        trial = [u for u in current.victims if u != unit_id]
        free = snap.free[domain.nodes].copy()
        position = {int(n): i for i, n in enumerate(domain.nodes.tolist())}
        for u in trial:
            for node, req in units[u].node_req.items():
                if node in position:
                    free[position[node]] += req
        if not _may_fit(problem, free, gang.pending):
            continue
        for scorer in (least_allocated_scores, tightest_fit_scores):
            nodes = place_least_allocated(snap, gang.pending, free.copy(), domain.nodes, None, scorer)
            assignments = [(p, n) for p, n in zip(gang.pending, nodes) if n >= 0]
            if len(assignments) < current.placed or not gang.succeeds(len(assignments)):
                continue
            candidate = problem.candidate(domain, assignments, trial, current.how)
            if candidate.rank() < current.rank():
                current = candidate
                break
    if current is not found:
        current.how = f"{found.how}, victims given back with the gang re-placed"
    return current


def _may_fit(problem: Problem, free: np.ndarray, pending: list[int]) -> bool:
    """Necessary condition, cheap: the domain has the room for what the gang needs, column by column."""
    need = max(problem.gang.needed(), 1)
    requests = problem.snapshot.pod_req[
        sorted(pending, key=lambda p: problem.snapshot.pod_req[p].sum())[:need]
    ]
    return bool((free.clip(min=0).sum(axis=0) >= requests.sum(axis=0)).all())


def _repack_floor(problem: Problem, candidate: Candidate) -> tuple[int, int, int, int, int]:
    """A lower bound on the cost of any subset of the candidate's victims that makes room: it needs at
    least k units, k the fewest of them whose released room covers what the domain lacks for the gang."""
    snap, units = problem.snapshot, problem.units.units
    nodes = set(candidate.domain.nodes.tolist())
    need = max(problem.gang.needed(), 1)
    asked = snap.pod_req[sorted(problem.gang.pending, key=lambda p: snap.pod_req[p].sum())[:need]].sum(axis=0)
    lacking = asked - snap.free[candidate.domain.nodes].clip(min=0).sum(axis=0)
    released = [
        sum((req for node, req in units[u].node_req.items() if node in nodes), np.zeros_like(asked))
        for u in candidate.victims
    ]
    k = 1
    for col in np.flatnonzero(lacking > 0).tolist():
        amounts = sorted((r[col] for r in released), reverse=True)
        covered, count = 0, 0
        for amount in amounts:
            if covered >= lacking[col]:
                break
            covered, count = covered + amount, count + 1
        k = max(k, count)
    short = np.flatnonzero(lacking > 0)
    alone = [u for u, r in zip(candidate.victims, released) if (r[short] >= lacking[short]).all()]
    if alone:  # one unit may do: only one that covers the lack by itself
        return min((0, units[u].priority, units[u].priority, 1, len(units[u].pods)) for u in alone)
    k = max(k, 2)
    priorities = sorted(units[u].priority for u in candidate.victims)
    pods = sorted(len(units[u].pods) for u in candidate.victims)
    return (0, priorities[k - 1], sum(priorities[:k]), k, sum(pods[:k]))
