"""Walk ``gangweb``'s topology domains in order and stop when the rest cannot win.

Domains arrive most promising first. The walk stops when the rest cannot win (their lower bound on
the highest victim priority is above a plan that already places every pod without PDB harm) or
after ``PATIENCE`` domains in a row brought no better plan (eight times that while the best plan still
breaks a PDB).

Domains are evaluated in this process, one after the other: a domain is less work than shipping its
results back from a process pool or a Celery worker (docs/measurements.md; docs/pipeline.md, "Planning").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .candidates import evaluate_domain

if TYPE_CHECKING:
    from ...evaluation import Candidate, Problem
    from ...preemptor import Domain

PATIENCE = 8


def _beaten(best: Candidate | None, bound: int, pending: int) -> bool:
    return (
        best is not None
        and best.placed == pending
        and best.cost.pdb_violations == 0
        and bound > best.cost.highest_victim_priority
    )


def _patience(best: Candidate | None) -> int:
    # A plan that breaks PDBs loses to any plan that does not, whatever its other costs, and domain
    # ranking does not foresee budgets: keep looking longer before settling for one.
    return PATIENCE if best is None or best.cost.pdb_violations == 0 else PATIENCE * 8


def evaluate_domains(
    problem: Problem, domains: Sequence[Domain], bounds: dict[int, int], seed: Candidate | None = None
) -> tuple[list[Candidate], int]:
    """Candidates from the domains worth evaluating, and how many domains were evaluated."""
    out: list[Candidate] = []
    best, stale, evaluated = seed, 0, 0
    pending = len(problem.gang.pending)
    for domain in domains:
        if _beaten(best, bounds[domain.order], pending) or stale >= _patience(best):
            break
        found = evaluate_domain(problem, domain)
        evaluated += 1
        out.extend(found)
        improved = False
        for candidate in found:
            if problem.gang.succeeds(candidate.placed) and (best is None or candidate.rank() < best.rank()):
                best, improved = candidate, True
        stale = 0 if improved else stale + 1
    return out, evaluated
