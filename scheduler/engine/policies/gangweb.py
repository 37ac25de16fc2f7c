"""``gangweb`` (default): several placements per domain, domains independent, cheapest plan wins.

Candidates: the ``kep5710`` plan itself (so gangweb is never worse by construction), and in every
promising domain a kube-like least-allocated placement and a cost-aware placement, each followed by
reprieval. Ranking (DESIGN.md): most pods placed, then (PDB violations, highest victim priority,
sum of victim priorities, victim units, evicted pods, lost GPU-seconds), then domain order.
"""

from __future__ import annotations

from typing import Sequence

from ..costaware import CostAwarePlacer
from ..evaluation import Candidate, Problem
from ..gang import Domain
from ..domainrank import rank_domains
from ..parallel import evaluate_domains
from ..plan import Plan
from ..unitfill import unit_fill_placement
from .base import PreemptionPolicy
from .explain import describe_choice, describe_infeasible
from .kep5710 import kep5710_candidate

MAX_DOMAINS = 64  # domains evaluated per plan at most, most promising first
SEARCH_ROUNDS, SEARCH_VICTIMS = 3, 4  # local search: rounds, and victims tried per round
SEARCH_NODE_BUDGET = 4096  # ...only while rounds x victims x domain nodes stays under this


def evaluate_domain(problem: Problem, domain: Domain) -> list[Candidate]:
    """All candidate plans this policy considers inside one domain."""
    out = []
    orders = (True, False) if problem.units.pod_pdbs else (True,)

    def reprieved(assignments: list[tuple[int, int]], how: str) -> None:
        for pdb_first in orders:
            label = how if pdb_first else f"{how} (importance order)"
            out.append(problem.candidate(domain, assignments, problem.reprieve(assignments, pdb_first), label))

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


class GangwebPolicy(PreemptionPolicy):
    name = "gangweb"
    summary = "cheapest of several placements per topology domain; never worse than kep5710"

    def preempt(self, problem: Problem, domains: Sequence[Domain]) -> Plan:
        kep, kep_most = kep5710_candidate(problem, domains)
        candidates = [kep] if kep is not None else []
        viable, bounds = rank_domains(problem, domains)
        if problem.only_domains is not None:  # one shard of a fan-out: kep5710 still sees everything
            viable = [d for d in viable if d.name in problem.only_domains]
        viable = viable[:MAX_DOMAINS]
        found, evaluated = evaluate_domains(problem, viable, bounds, seed=kep)
        candidates += found
        workable = [c for c in candidates if problem.gang.succeeds(c.placed)]
        if not workable:
            return problem.plan(self.name, False, describe_infeasible(problem, kep_most))
        best = improve(problem, min(workable, key=Candidate.rank))
        how = f"{best.how}; cheapest of {len(workable)} candidate plan(s) over {evaluated} domain(s)"
        if kep is not None and best is not kep and best.rank() < kep.rank():
            how += f" (kep5710 would evict {len(kep.victims)} unit(s), highest priority {kep.cost[1]})"
        return problem.plan(self.name, True, describe_choice(problem, best, how), best)
