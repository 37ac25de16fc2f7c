"""``legacy``: classic per-pod preemption, each gang pod on its own, blind to groups.

What kube-scheduler did before workload-aware preemption: a pod that does not fit picks one node
(``SelectVictimsOnNode`` + ``pickOneNodeForPreemption``) and evicts lower-priority *pods* there,
whatever group they belong to. Kept only to measure what atomic preemption saves: gangs left partly
evicted (their surviving pods hold GPUs that do no work) and evictions wasted on a gang that still
cannot start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from scheduler.words import plural

from ..contract import NO_VICTIM_COST, NO_VICTIM_PRIORITY, Cost, Plan, Victim
from ..evaluation import Candidate, Problem
from ..outcomes import Outcome
from ..placement import fit_columns, least_allocated_scores, node_mask, ports_conflict
from ..preemptor import Domain
from .base import PreemptionPolicy

if TYPE_CHECKING:
    from ..typed_objects import HostPort

MIN_CANDIDATES, CANDIDATE_PERCENT = 100, 10  # kube-scheduler's minCandidateNodes{Absolute,Percentage}
MAX_DOMAINS = 64  # topology domains tried at most, as many as gangweb visits


class NodeChoice(NamedTuple):
    """One node ``SelectVictimsOnNode`` found for a pod: its pickOneNodeForPreemption rank (lowest
    wins; the node itself breaks ties) and the pods to evict there."""

    rank: tuple[int, int, int, int, float, int]  # PDB violations, top priority, sum, count, -start, node
    pods: list[int]

    @property
    def node(self) -> int:
        return self.rank[-1]


class _State:
    def __init__(self, problem: Problem, released: np.ndarray) -> None:
        snap = problem.snapshot
        self.problem, self.snap = problem, snap
        self.free = snap.free.copy()
        self.priority = problem.priority
        # Lower-priority pods still present, per node: what per-pod preemption may take.
        self.released = released.copy()
        self.evicted: list[int] = []
        self.evicted_set: set[int] = set()
        self.budget = [pdb.allowed for pdb in snap.pdbs]
        self.placed_ports: dict[int, list[HostPort]] = {}

    def ports_in_use(self, node: int, spared: Sequence[int] = ()) -> list[HostPort]:
        """Host ports held on the node by pods still there (and the gang pods placed so far)."""
        pods = self.snap.pods
        return [
            port
            for p in self.snap.pods_by_node[node]
            if pods[p].host_ports and p not in self.evicted_set and p not in spared
            for port in pods[p].host_ports
        ] + self.placed_ports.get(node, [])

    def victims_on(
        self, node: int, request: np.ndarray, cols: np.ndarray, wanted_ports: Sequence[HostPort] = ()
    ) -> NodeChoice | None:
        """SelectVictimsOnNode: remove all lower pods, reprieve PDB violators then others, most
        important first. None when the pod cannot fit there whatever is evicted."""
        snap, pods = self.snap, self.snap.pods
        lower = [
            p
            for p in snap.pods_by_node[node]
            if p not in self.evicted_set and snap.pod_priority[p] < self.priority
        ]
        if wanted_ports and ports_conflict(wanted_ports, self.ports_in_use(node, spared=lower)):
            return None  # a port is held by a pod this preemptor may not evict
        lower.sort(key=lambda p: (-snap.pod_priority[p], pods[p].start_time or float("inf"), pods[p].uid))
        slack = self.free[node] + (snap.pod_req[lower].sum(axis=0) if lower else 0)
        if np.any(slack[cols] < request[cols]):
            return None
        pdb_of = self.problem.units.pod_pdbs
        budget = list(self.budget)
        violating: list[int] = []
        fine: list[int] = []
        for p in lower:
            hit = False
            for pdb in pdb_of.get(p, ()):
                budget[pdb] -= 1
                hit = hit or budget[pdb] < 0
            (violating if hit else fine).append(p)
        chosen = []
        for p in violating + fine:
            if wanted_ports and pods[p].host_ports and ports_conflict(wanted_ports, pods[p].host_ports):
                chosen.append(p)
            elif np.all(slack[cols] - snap.pod_req[p][cols] >= request[cols]):
                slack = slack - snap.pod_req[p]
            else:
                chosen.append(p)
        violators = set(violating)
        n_violating = sum(1 for p in chosen if p in violators)
        priorities = [snap.pod_priority[p] for p in chosen]
        top = max(priorities, default=NO_VICTIM_PRIORITY)
        # pickOneNodeForPreemption: ... then the latest start among the highest-priority victims.
        top_start = max(
            ((pods[p].start_time or 0.0) for p in chosen if snap.pod_priority[p] == top), default=0.0
        )
        return NodeChoice((n_violating, top, sum(priorities), len(chosen), -top_start, node), chosen)

    def evict(self, pods: Sequence[int]) -> None:
        snap = self.snap
        for p in pods:
            node = int(snap.pod_node[p])
            self.free[node] += snap.pod_req[p]
            self.released[node] -= snap.pod_req[p]
            self.evicted.append(p)
            self.evicted_set.add(p)
            for pdb in self.problem.units.pod_pdbs.get(p, ()):
                self.budget[pdb] -= 1


class Attempt(NamedTuple):
    """Per-pod preemption inside one domain: what it evicted, the pods it placed, where."""

    state: _State
    assignments: list[tuple[int, int]]
    domain: Domain


def _released(problem: Problem) -> np.ndarray:
    """Requests of the lower-priority pods per node: what per-pod preemption may take."""
    snap = problem.snapshot
    lower = [p for p in snap.bound.tolist() if snap.pod_priority[p] < problem.priority]
    released = np.zeros_like(snap.alloc)
    if lower:
        np.add.at(released, snap.pod_node[lower], snap.pod_req[lower])
    return released


class LegacyPolicy(PreemptionPolicy):
    name = "legacy"
    summary = "classic per-pod preemption, group-unaware (for comparison only)"
    atomic = False

    def preempt(self, problem: Problem, domains: Sequence[Domain]) -> Plan:
        """Per-pod preemption inside one domain at a time. Without a topology constraint that is
        the whole cluster. With one, a group-unaware scheduler still could not split the gang, so
        domains are tried in kep5710's order (most room once lower-priority pods are gone) and the
        first where the group succeeds wins; if none does, the attempt that placed most is shown."""
        released = _released(problem)
        if problem.gang.group.topology_key is None:
            return self._plan(problem, *self._in_domain(problem, domains[0], released))
        ordered = problem.ordered_domains(problem.free_removed(), domains) or list(domains)
        best: Attempt | None = None
        for domain in ordered[:MAX_DOMAINS]:
            attempt = self._in_domain(problem, domain, released)
            if problem.gang.succeeds(len(attempt.assignments)):
                return self._plan(problem, *attempt)
            if best is None or len(attempt.assignments) > len(best.assignments):
                best = attempt
        assert best is not None  # there is always a domain: the whole cluster at least
        return self._plan(problem, *best)

    def _in_domain(self, problem: Problem, domain: Domain, released: np.ndarray) -> Attempt:
        snap, gang = problem.snapshot, problem.gang
        state = _State(problem, released)
        everywhere = np.arange(len(snap.nodes))
        in_domain = np.zeros(len(snap.nodes), dtype=bool)
        in_domain[domain.nodes] = True
        n_candidates = max(MIN_CANDIDATES, len(snap.nodes) * CANDIDATE_PERCENT // 100)
        assignments = []
        for pod_idx in gang.pending:
            request = snap.pod_req[pod_idx]
            cols = fit_columns(request)
            allowed = node_mask(snap, snap.pods[pod_idx]) & in_domain
            fits_now = np.flatnonzero(allowed & np.all(state.free[:, cols] >= request[cols], axis=1))
            ports = snap.pods[pod_idx].host_ports
            if ports and len(fits_now):
                fits_now = np.array(
                    [n for n in fits_now.tolist() if not ports_conflict(ports, state.ports_in_use(n))],
                    dtype=np.int64,
                )
            if len(fits_now):
                scores = least_allocated_scores(snap, state.free[everywhere], request, fits_now, everywhere)
                node = int(fits_now[int(np.argmax(scores))])
            else:
                reachable = allowed & np.all(
                    state.free[:, cols] + state.released[:, cols] >= request[cols], axis=1
                )
                best = None
                for node in np.flatnonzero(reachable)[:n_candidates].tolist():
                    found = state.victims_on(node, request, cols, ports)
                    if found is not None and (best is None or found.rank < best.rank):
                        best = found
                if best is None:
                    continue  # this pod stays pending; the evictions already made stay made
                node = best.node
                state.evict(best.pods)
            state.free[node] -= request
            if ports:
                state.placed_ports.setdefault(node, []).extend(ports)
            assignments.append((pod_idx, node))
        return Attempt(state, assignments, domain)

    def _plan(
        self, problem: Problem, state: _State, assignments: list[tuple[int, int]], domain: Domain
    ) -> Plan:
        snap, gang = problem.snapshot, problem.gang
        feasible = gang.succeeds(len(assignments))
        evicted = set(state.evicted)
        broken, idle_gpus = 0, 0
        gpus = snap.gpus(snap.pod_req)
        for unit in problem.units.units:
            if len(unit.pods) > 1 and unit.kind != "Pod":
                hit = sum(1 for p in unit.pods if p in evicted)
                if 0 < hit < len(unit.pods):
                    broken += 1
                    idle_gpus += int(sum(int(gpus[p]) for p in unit.pods if p not in evicted))
        stranded = 0 if feasible else int(sum(int(gpus[p]) for p, _ in assignments))
        victims = [
            Victim(
                kind="Pod",
                namespace=snap.pods[p].namespace,
                name=snap.pods[p].name,
                priority=snap.pod_priority[p],
                pods=[snap.pods[p].key],
                gpus=int(gpus[p]),
                lost_gpu_seconds=round(float(problem.units.pod_lost[p]), 3),
                pdb_violations=0,
            )
            for p in sorted(evicted)
        ]
        candidate = Candidate(domain, assignments, [], NO_VICTIM_COST, "legacy")
        where = f" in {gang.group.topology_key}={domain.name}" if domain.name is not None else ""
        reason = (
            f"per-pod preemption evicted {plural(len(victims), 'pod')} and placed {len(assignments)} of "
            f"{plural(len(gang.pending), 'pending pod')}{where}"
        )
        if broken:
            reason += f"; it left {plural(broken, 'gang')} partly evicted, their {plural(idle_gpus, 'remaining GPU')} idle"
        if not feasible:
            reason += f"; the group is still short of {'minCount ' + str(gang.min_count) if gang.is_gang else 'one pod'}"
        plan = problem.plan(
            self.name,
            feasible,
            reason,
            candidate,
            why=Outcome.NO_ROOM,
            partly_evicted_gangs=broken,
            idle_gpus=idle_gpus,
            stranded_gpus=stranded,
            evicted_pods=len(victims),
        )
        plan.victims = victims
        plan.cost = Cost(
            0,
            max((v.priority for v in victims), default=NO_VICTIM_PRIORITY),
            sum(v.priority for v in victims),
            len(victims),
            len(victims),
            round(sum(v.lost_gpu_seconds for v in victims), 3),
        )
        return plan
