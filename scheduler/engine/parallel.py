"""Evaluate topology domains for ``gangweb``: in-process, or in a forked process pool when big.

Domains arrive most promising first. The walk stops when the rest cannot win (their lower bound on
the highest victim priority is above a plan that already places every pod without PDB harm) or
after ``PATIENCE`` domains in a row brought no better plan (eight times that while the best plan still
breaks a PDB). The pool evaluates domains in rounds
and the same walk is applied to its ordered results, so the plan never depends on the route.

Measured on the 2-core benchmark machine the pool does not pay (20,000 nodes, 64 domains: 65 ms
pooled against 53 ms in-process; figures in docs/engine.md): a domain is a few ms of work, less
than shipping its results back. It only engages above ``PARALLEL_MIN_NODES`` nodes of domain work.
"""

from __future__ import annotations

import multiprocessing
import os
import weakref
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from .evaluation import Candidate, Problem
    from .gang import Domain

PATIENCE = 8
PARALLEL_MIN_NODES = int(os.environ.get("GANGWEB_ENGINE_PARALLEL_MIN_NODES", "200000"))
_SNAPSHOTS: dict[int, object] = {}
_POOLS: dict[int, ProcessPoolExecutor] = {}


def worker_count() -> int:
    configured = os.environ.get("GANGWEB_ENGINE_WORKERS")
    if configured is not None:
        try:
            return max(0, int(configured))
        except ValueError:
            return 0
    cpus = os.cpu_count() or 1
    return min(cpus, 8) if cpus > 1 else 0


def _beaten(best: "Candidate | None", bound: int, pending: int) -> bool:
    return best is not None and best.placed == pending and best.cost[0] == 0 and bound > best.cost[1]


def _patience(best: "Candidate | None") -> int:
    # A plan that breaks PDBs loses to any plan that does not, whatever its other costs, and domain
    # ranking does not foresee budgets: keep looking longer before settling for one.
    return PATIENCE if best is None or best.cost[0] == 0 else PATIENCE * 8


def evaluate_domains(problem: "Problem", domains: Sequence["Domain"], bounds: dict[int, int],
                     seed: "Candidate | None" = None) -> tuple[list["Candidate"], int]:
    """Candidates from the domains worth evaluating, and how many domains were evaluated."""
    from .policies.gangweb import evaluate_domain

    workers = worker_count()
    use_pool = workers >= 2 and sum(len(d.nodes) for d in domains) >= PARALLEL_MIN_NODES
    out: list = []
    best, stale, evaluated = seed, 0, 0
    pending = len(problem.gang.pending)
    position = 0
    while position < len(domains):
        batch = domains[position:position + (workers * 2 if use_pool else 1)]
        results = _in_pool(problem, batch, workers) if use_pool else [evaluate_domain(problem, batch[0])]
        for domain, found in zip(batch, results):
            if _beaten(best, bounds[domain.order], pending) or stale >= _patience(best):
                return out, evaluated
            evaluated += 1
            out.extend(found)
            improved = False
            for candidate in found:
                if problem.gang.succeeds(candidate.placed) and (best is None or candidate.rank() < best.rank()):
                    best, improved = candidate, True
            stale = 0 if improved else stale + 1
        position += len(batch)
    return out, evaluated


def _pool_for(snapshot) -> ProcessPoolExecutor:
    token = id(snapshot)
    pool = _POOLS.get(token)
    if pool is None:
        _SNAPSHOTS[token] = snapshot  # inherited by the forked workers, never pickled
        pool = ProcessPoolExecutor(max_workers=worker_count(), mp_context=multiprocessing.get_context("fork"))
        _POOLS[token] = pool
        weakref.finalize(snapshot, _drop, token)
    return pool


def _drop(token: int) -> None:
    pool = _POOLS.pop(token, None)
    _SNAPSHOTS.pop(token, None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def _in_pool(problem: "Problem", domains: Sequence["Domain"], workers: int) -> list[list["Candidate"]]:
    pool = _pool_for(problem.snapshot)
    futures = [pool.submit(_evaluate_one, id(problem.snapshot), problem.gang.key, d.order) for d in domains]
    out = []
    for domain, future in zip(domains, futures):
        out.append([problem.candidate(domain, assignments, victims, how) for assignments, victims, how in future.result()])
    return out


_WORKER_PROBLEMS: dict = {}


def _evaluate_one(token: int, podgroup: str, order: int) -> list[tuple]:
    from .evaluation import Problem
    from .gang import Gang
    from .policies.gangweb import evaluate_domain

    snapshot = _SNAPSHOTS[token]
    key = (token, podgroup)
    if key not in _WORKER_PROBLEMS:
        gang = Gang(snapshot, podgroup)
        _WORKER_PROBLEMS.clear()
        _WORKER_PROBLEMS[key] = (Problem(snapshot, gang), {d.order: d for d in gang.domains()[0]})
    problem, domains = _WORKER_PROBLEMS[key]
    return [(c.assignments, c.victims, c.how) for c in evaluate_domain(problem, domains[order])]
