"""What every policy shares: the checks that come before any preemption, and the interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from scheduler.words import plural

from ..contract import Plan
from ..evaluation import Candidate, Problem
from ..outcomes import Outcome
from ..preemptor import Domain


def waits_for_leaving(problem: Problem, candidate: Candidate) -> int:
    """How many lower-priority pods already terminating the placement waits for: those on the nodes
    where the gang's pods fit only once they are gone (``Snapshot.holding_for``)."""
    snap = problem.snapshot
    below = set(snap.leaving_below(problem.priority))
    if not below:
        return 0
    by_node: dict[int, list[int]] = {}
    for p, n in zip(snap.leaving.tolist(), snap.leaving_node.tolist()):
        if p in below:
            by_node.setdefault(n, []).append(p)
    wanted: dict[int, np.ndarray] = {}
    for p, n in candidate.assignments:
        if n in by_node:
            wanted[n] = wanted.get(n, 0) + snap.pod_req[p]
    waited = 0
    for n, need in wanted.items():
        still_there = snap.free[n] - snap.pod_req[by_node[n]].sum(axis=0)
        if np.any(need > still_there):
            waited += len(by_node[n])
    return waited


class PreemptionPolicy(ABC):
    """A way to choose victims for a gang that does not fit. Extension point: subclass, register
    in ``POLICIES``. ``preempt`` is only called once the common checks say preemption is needed."""

    name: str = ""
    summary: str = ""
    # Evicts whole victim units, so its plans are graded against the brute-force optimum (testkit/quality.py);
    # False for a group-unaware policy kept for comparison.
    atomic: bool = True
    # Runs an exact search on its plans and says in each whether it is proven the cheapest (gangweb).
    searches_exactly: bool = False

    def plan(self, problem: Problem) -> Plan:
        gang = problem.gang
        notes = []
        affinity = gang.pod_affinity_users()
        if affinity:
            notes.append(
                f"inter-pod affinity of {plural(len(affinity), 'pod')} (e.g. {affinity[0]}) was ignored"
            )
        claims = gang.device_problems()
        if claims is not None:
            notes.extend(claims.notes)
        if not gang.pending:
            ok = len(gang.running) >= gang.min_count
            return self._finish(
                problem.plan(
                    self.name,
                    ok,
                    (
                        f"no pending pods; {plural(len(gang.running), 'pod')} already running"
                        + ("" if ok else f", fewer than minCount {gang.min_count}")
                    ),
                    why=Outcome.TOO_FEW_PODS,
                ),
                notes,
            )
        if gang.group.invalid is not None:
            reason = (
                f"kube-scheduler found the group invalid ({gang.group.invalid}); no eviction would place it"
            )
            return self._finish(problem.plan(self.name, False, reason, why=Outcome.INVALID_GROUP), notes)
        mismatch = gang.priority_mismatch()
        if mismatch:
            return self._finish(
                problem.plan(self.name, False, mismatch, why=Outcome.PRIORITY_MISMATCH), notes
            )
        if claims is not None and claims.blocked:
            return self._finish(
                problem.plan(self.name, False, claims.blocked, why=Outcome.DEVICE_CLAIM), notes
            )
        if claims is not None and claims.freeing:
            if gang.never_preempts:
                reason = f"the group's claims need evictions ({'; '.join(claims.freed)}) but preemptionPolicy=Never"
                return self._finish(problem.plan(self.name, False, reason, why=Outcome.DEVICE_CLAIM), notes)
            from ..dra.groupclaims import plan_freeing  # local: only PodGroup-level claims need it

            return self._finish(plan_freeing(self, problem, claims), notes)
        no_node = gang.no_node_reason()
        if no_node:
            return self._finish(problem.plan(self.name, False, no_node, why=Outcome.NO_USABLE_NODE), notes)
        domains, why_not = gang.domains()
        if why_not:
            return self._finish(problem.plan(self.name, False, why_not, why=Outcome.TOPOLOGY), notes)
        fitting = self.fits_without_preemption(problem, domains)
        if fitting is not None:
            placed = fitting.placed
            where = f" in {gang.group.topology_key}={fitting.domain.name}" if fitting.domain.name else ""
            if placed == len(gang.pending):
                reason = f"all {plural(placed, 'pending pod')} fit{where} without preemption"
            else:
                reason = (
                    f"{placed} of {len(gang.pending)} pending pods fit{where} without preemption, enough for "
                    f"{'minCount ' + str(gang.min_count) if gang.is_gang else 'a basic group'}; "
                    "kube-scheduler binds them and does not preempt"
                )
            leaving = waits_for_leaving(problem, fitting)
            if leaving:
                reason += f" once {plural(leaving, 'lower-priority pod')} already terminating there {'is' if leaving == 1 else 'are'} gone"
            return self._finish(problem.plan(self.name, True, reason, fitting), notes)
        if gang.never_preempts:
            return self._finish(
                problem.plan(
                    self.name,
                    False,
                    ("the group does not fit and is not eligible to preempt (preemptionPolicy=Never)"),
                    why=Outcome.NEVER_PREEMPTS,
                ),
                notes,
            )
        waiting = self.ongoing_preemption(problem)
        if waiting is not None:
            return self._finish(waiting, notes)
        if problem.eligible_count == 0:
            return self._finish(
                problem.plan(
                    self.name,
                    False,
                    (
                        f"the group does not fit and no running pod has priority below {gang.priority}: "
                        "no preemption victims found"
                    ),
                    why=Outcome.NO_VICTIMS,
                ),
                notes,
            )
        return self._finish(self.preempt(problem, domains), notes)

    def fits_without_preemption(self, problem: Problem, domains: Sequence[Domain]) -> Candidate | None:
        free = problem.snapshot.free
        for domain in problem.ordered_domains(free, domains):
            assignments = problem.place(domain, free, removed_all=False)
            if problem.gang.succeeds(len(assignments)):
                return problem.candidate(domain, assignments, [], "no preemption")
        return None

    def ongoing_preemption(self, problem: Problem) -> Plan | None:
        """A plan that waits for a preemption already under way, or None to preempt; asked once the
        gang does not fit and may preempt. None here: a policy that waits says when."""
        return None

    @staticmethod
    def _finish(plan: Plan, notes: list[str]) -> Plan:
        if notes:
            plan.reason = f"{plan.reason} (note: {'; '.join(notes)})"
        return plan

    @abstractmethod
    def preempt(self, problem: Problem, domains: Sequence[Domain]) -> Plan:
        """Choose victims; the gang does not fit as things are and may preempt."""
