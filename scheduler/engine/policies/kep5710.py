"""``kep5710``: kube-scheduler's beta pod-group preemption (PodGroupEvaluator).

One domain (the cluster, or the best topology value by room, standing in for TAS placement
scoring); every lower-priority victim removed; the gang placed once; that placement fixed; victims
reprieved one by one, PDB violators first and most important first within each list. Before all
that, a gang with a preemption under way on its nominated nodes waits for it (``isOngoingPreemption``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..contract import Plan
from ..evaluation import Candidate, Problem
from ..outcomes import Outcome
from ..preemptor import Domain
from .base import PreemptionPolicy
from .explain import describe_choice, describe_infeasible


def kep5710_candidate(problem: Problem, domains: Sequence[Domain]) -> tuple[Candidate | None, int]:
    """The beta evaluator's choice, or (None, most pods it could place)."""
    free = problem.free_removed()
    best_domain, best = None, []
    for domain in problem.ordered_domains(free, domains):
        assignments = problem.place(domain, free, removed_all=True)
        if best_domain is None or len(assignments) > len(best):
            best_domain, best = domain, assignments
        if len(assignments) == len(problem.gang.pending):
            break
    if best_domain is None or not problem.gang.succeeds(len(best)):
        return None, len(best)
    return problem.candidate(
        best_domain, best, problem.reprieve(best), "fixed placement, greedy reprieval"
    ), len(best)


def nominations(problem: Problem) -> dict[str, str]:
    """Pending member -> its ``status.nominatedNodeName``, for the nominations naming a node of the snapshot."""
    snap = problem.snapshot
    out = {}
    for p in problem.gang.pending:
        node = snap.pods[p].nominated_node
        if node is not None and node in snap.node_index:
            out[snap.pods[p].key] = node
    return out


def ongoing_preemption_nodes(problem: Problem) -> list[str]:
    """The nodes, nominated to a pending member, that hold a pod of lower priority terminating by
    kube-scheduler's preemption (v1.37.2 ``isOngoingPreemption``): sorted, empty when there is none."""
    nominated = set(nominations(problem).values())
    if not nominated:
        return []
    snap, priority = problem.snapshot, problem.gang.priority
    return sorted(
        {
            pod.node_name
            for i, pod in enumerate(snap.pods)
            if pod.preempted
            and pod.node_name is not None
            and pod.node_name in nominated
            and snap.pod_priority[i] < priority
        }
    )


class Kep5710Policy(PreemptionPolicy):
    name = "kep5710"
    summary = "kube-scheduler v1.37 beta: one placement after removing all candidates, greedy reprieval"
    reprieve_filter_factory = None  # the PreemptionManager seam: set to a ReprieveFilter factory

    def ongoing_preemption(self, problem: Problem) -> Plan | None:
        """kube-scheduler preempts nothing more and keeps each member's nomination (none for the rest)."""
        nodes = ongoing_preemption_nodes(problem)
        if not nodes:
            return None
        shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        plan = problem.plan(
            self.name,
            True,
            (
                f"ongoing preemption on nominated nodes ({shown}): a lower-priority pod there is terminating "
                "by preemption, so kube-scheduler keeps the nominations and preempts nothing more"
            ),
        )
        plan.placement = nominations(problem)
        return plan

    def preempt(self, problem: Problem, domains: Sequence[Domain]) -> Plan:
        problem.reprieve_filter_factory = self.reprieve_filter_factory
        candidate, most = kep5710_candidate(problem, domains)
        if candidate is None:
            return problem.plan(self.name, False, describe_infeasible(problem, most), why=Outcome.NO_ROOM)
        reason = describe_choice(
            problem,
            candidate,
            (
                f"kube-scheduler's beta evaluator fixed the placement after removing all {problem.eligible_count} "
                "lower-priority victim unit(s), then reprieved victims most important first (PDB violators first)"
            ),
        )
        return problem.plan(self.name, True, reason, candidate)
