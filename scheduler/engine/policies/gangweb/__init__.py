"""``gangweb`` (default): several placements per domain, domains independent, cheapest plan wins.

Candidates: the ``kep5710`` plan itself (so gangweb is never worse by construction), and in every
promising domain a kube-like least-allocated placement and a cost-aware placement, each followed by
reprieval. Ranking (docs/design.md): most pods placed, then (PDB violations, highest victim priority,
sum of victim priorities, victim units, evicted pods, lost GPU-seconds), then domain order.

The heuristic's plan is then the first incumbent of an exact search (``exact.py``), which either
proves it the cheapest or finds the cheaper one; the plan's ``optimality`` says which, or why not.

The policy's own helpers live beside it: ``domainrank.py`` (which domains first), ``walk.py`` (the
walk over them and when it stops), ``candidates.py`` (the plans tried in one domain, and the local
search), ``costaware.py`` and ``unitfill.py`` (two of those placements), ``exact.py`` (the exact search).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.words import plural

from ...contract import Plan
from ...evaluation import Candidate, Problem
from ...outcomes import Outcome
from ...preemptor import Domain
from ..base import PreemptionPolicy
from ..explain import alternatives, describe_choice, describe_infeasible
from ..kep5710 import kep5710_candidate
from .candidates import improve
from .domainrank import rank_domains
from .exact import search
from .walk import evaluate_domains

MAX_DOMAINS = 64  # domains evaluated per plan at most, most promising first


class GangwebPolicy(PreemptionPolicy):
    name = "gangweb"
    summary = (
        "cheapest of several placements per topology domain, then an exact search; never worse than kep5710"
    )
    searches_exactly = True

    def preempt(self, problem: Problem, domains: Sequence[Domain]) -> Plan:
        kep, kep_most = kep5710_candidate(problem, domains)
        candidates = [kep] if kep is not None else []
        viable, bounds = rank_domains(problem, domains)
        viable = viable[:MAX_DOMAINS]
        found, evaluated = evaluate_domains(problem, viable, bounds, seed=kep)
        candidates += found
        workable = [c for c in candidates if problem.gang.succeeds(c.placed)]
        if not workable:
            return problem.plan(self.name, False, describe_infeasible(problem, kep_most), why=Outcome.NO_ROOM)
        heuristic = improve(problem, min(workable, key=Candidate.rank), workable)
        best, optimality, _ = search(problem, heuristic, domains)
        how = f"{heuristic.how}; cheapest of {plural(len(workable), 'candidate plan')} over {plural(evaluated, 'domain')}"
        if kep is not None and heuristic is not kep and heuristic.rank() < kep.rank():
            how += (
                f" (kep5710 would evict {plural(len(kep.victims), 'unit')}, "
                f"highest priority {kep.cost.highest_victim_priority})"
            )
        if best is not heuristic:
            how = (
                f"{best.how}, cheaper than the heuristic's plan, which evicted "
                f"{plural(len(heuristic.victims), 'unit')} ({plural(heuristic.cost.evicted_pods, 'pod')}, "
                f"highest priority {heuristic.cost.highest_victim_priority}, "
                f"{plural(heuristic.cost.pdb_violations, 'PDB violation')}): {how}"
            )
        plan = problem.plan(
            self.name,
            True,
            describe_choice(problem, best, how),
            best,
            alternatives=alternatives(problem, best, [heuristic, *workable]),
        )
        plan.searched = optimality
        return plan


__all__ = ["MAX_DOMAINS", "GangwebPolicy"]
