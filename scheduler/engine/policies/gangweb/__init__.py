"""``gangweb`` (default): several placements per domain, domains independent, cheapest plan wins.

Candidates: the ``kep5710`` plan itself (so gangweb is never worse by construction), and in every
promising domain a kube-like least-allocated placement and a cost-aware placement, each followed by
reprieval. Ranking (docs/design.md): most pods placed, then (PDB violations, highest victim priority,
sum of victim priorities, victim units, evicted pods, lost GPU-seconds), then domain order.

The policy's own helpers live beside it: ``domainrank.py`` (which domains first), ``walk.py`` (the
walk over them and when it stops), ``candidates.py`` (the plans tried in one domain, and the local
search), ``costaware.py`` and ``unitfill.py`` (two of those placements).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.words import plural

from ...contract import Plan
from ...evaluation import Candidate, Problem
from ...preemptor import Domain
from ..base import PreemptionPolicy
from ..explain import describe_choice, describe_infeasible
from ..kep5710 import kep5710_candidate
from .candidates import improve
from .domainrank import rank_domains
from .walk import evaluate_domains

MAX_DOMAINS = 64  # domains evaluated per plan at most, most promising first


class GangwebPolicy(PreemptionPolicy):
    name = "gangweb"
    summary = "cheapest of several placements per topology domain; never worse than kep5710"

    def preempt(self, problem: Problem, domains: Sequence[Domain]) -> Plan:
        kep, kep_most = kep5710_candidate(problem, domains)
        candidates = [kep] if kep is not None else []
        viable, bounds = rank_domains(problem, domains)
        viable = viable[:MAX_DOMAINS]
        found, evaluated = evaluate_domains(problem, viable, bounds, seed=kep)
        candidates += found
        workable = [c for c in candidates if problem.gang.succeeds(c.placed)]
        if not workable:
            return problem.plan(self.name, False, describe_infeasible(problem, kep_most), why="no-room")
        best = improve(problem, min(workable, key=Candidate.rank), workable)
        how = f"{best.how}; cheapest of {plural(len(workable), 'candidate plan')} over {plural(evaluated, 'domain')}"
        if kep is not None and best is not kep and best.rank() < kep.rank():
            how += (
                f" (kep5710 would evict {plural(len(kep.victims), 'unit')}, "
                f"highest priority {kep.cost.highest_victim_priority})"
            )
        return problem.plan(self.name, True, describe_choice(problem, best, how), best)


__all__ = ["MAX_DOMAINS", "GangwebPolicy"]
