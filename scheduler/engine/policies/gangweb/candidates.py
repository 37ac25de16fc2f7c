"""The candidate plans ``gangweb`` builds inside one topology domain, and the local search around the winner.

In a domain: a kube-like least-allocated placement, a unit-fill placement (``unitfill.py``) and a
cost-aware placement (``costaware.py``), each followed by reprieval (kube-scheduler's PDB-first
order and, when the snapshot has PDBs, plain importance order too); the cost-aware placement's own
victim set is a candidate as well.
"""

from __future__ import annotations

from ...evaluation import Candidate, Problem
from ...preemptor import Domain
from .costaware import CostAwarePlacer
from .unitfill import unit_fill_placement

SEARCH_ROUNDS, SEARCH_VICTIMS = 3, 4  # local search: rounds, and victims tried per round
SEARCH_NODE_BUDGET = 4096  # ...only while rounds x victims x domain nodes stays under this


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


def improve(problem: Problem, best: Candidate) -> Candidate:
    """Local search around the winner: forbid one of its victims (most important first) and plan
    that domain again; keep any cheaper plan. Greedy placements are myopic (a pod takes the cheap
    node that a later pod needed too); this repairs the common cases on small domains."""
    if not best.victims or SEARCH_ROUNDS * SEARCH_VICTIMS * len(best.domain.nodes) > SEARCH_NODE_BUDGET:
        return best
    spared: frozenset[int] = frozenset()
    for _ in range(SEARCH_ROUNDS):
        improved = False
        for unit_id in sorted(best.victims)[:SEARCH_VICTIMS]:
            variant = problem.sparing(spared | {unit_id})
            for candidate in evaluate_domain(variant, best.domain):
                if problem.gang.succeeds(candidate.placed) and candidate.rank() < best.rank():
                    best, improved = candidate, True
                    best.how += " improved by local search"
                    spared = spared | {unit_id}
        if not improved:
            break
    return best
