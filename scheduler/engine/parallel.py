"""Evaluate topology domains in-process, or in a forked process pool when the work is large.

Results never depend on the route: every domain is evaluated the same way and the caller ranks
the union with a total order; pruning is only applied where it is exact (a domain whose lower bound
on the highest victim priority exceeds a plan that already places every pod without PDB harm).
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

PARALLEL_MIN_DOMAINS = 8
PARALLEL_MIN_NODES = 4000
_SNAPSHOTS: dict[int, object] = {}
_POOLS: dict[int, ProcessPoolExecutor] = {}


def worker_count() -> int:
    configured = os.environ.get("GANGWEB_ENGINE_WORKERS")
    if configured is not None:
        try:
            return max(0, int(configured))
        except ValueError:
            return 0
    return min(os.cpu_count() or 1, 4) if (os.cpu_count() or 1) > 1 else 0


def _prunable(best: "Candidate | None", bound: int, pending: int) -> bool:
    return best is not None and best.placed == pending and best.cost[0] == 0 and bound > best.cost[1]


def evaluate_domains(problem: "Problem", domains: Sequence["Domain"], bounds: dict[int, int],
                     seed: "Candidate | None" = None) -> list["Candidate"]:
    from .policies.gangweb import evaluate_domain

    workers = worker_count()
    nodes = sum(len(d.nodes) for d in domains)
    if workers >= 2 and len(domains) >= PARALLEL_MIN_DOMAINS and nodes >= PARALLEL_MIN_NODES:
        return _in_pool(problem, domains, workers)
    out: list = []
    best = seed
    pending = len(problem.gang.pending)
    for domain in domains:
        if _prunable(best, bounds[domain.order], pending):
            break  # domains are sorted by bound: none of the rest can win
        found = evaluate_domain(problem, domain)
        out.extend(found)
        for candidate in found:
            if problem.gang.succeeds(candidate.placed) and (best is None or candidate.rank() < best.rank()):
                best = candidate
    return out


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


def _in_pool(problem: "Problem", domains: Sequence["Domain"], workers: int) -> list["Candidate"]:
    pool = _pool_for(problem.snapshot)
    orders = [d.order for d in domains]
    chunks = [orders[i::workers] for i in range(workers)]
    futures = [pool.submit(_evaluate_chunk, id(problem.snapshot), problem.gang.key, chunk) for chunk in chunks if chunk]
    by_order = {d.order: d for d in domains}
    out = []
    for future in futures:
        for order, assignments, victims, how in future.result():
            out.append(problem.candidate(by_order[order], assignments, victims, how))
    return out


_WORKER_PROBLEMS: dict = {}


def _evaluate_chunk(token: int, podgroup: str, orders: list[int]) -> list[tuple]:
    from .evaluation import Problem
    from .gang import Gang
    from .policies.gangweb import evaluate_domain

    snapshot = _SNAPSHOTS[token]
    key = (token, podgroup)
    if key not in _WORKER_PROBLEMS:
        gang = Gang(snapshot, podgroup)
        domains = {d.order: d for d in gang.domains()[0]}
        _WORKER_PROBLEMS.clear()
        _WORKER_PROBLEMS[key] = (Problem(snapshot, gang), domains)
    problem, domains = _WORKER_PROBLEMS[key]
    return [(c.domain.order, c.assignments, c.victims, c.how)
            for order in orders for c in evaluate_domain(problem, domains[order])]
