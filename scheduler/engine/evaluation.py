"""Shared machinery for policies: one preemption problem, placements, reprieval and plan building.

A ``Problem`` is one (snapshot, gang) pair. It never mutates the snapshot: every simulation works
on copies of the free-capacity matrix or on small per-node slack vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from .contract import Cost, Plan, Victim
from .outcomes import Outcome
from .placement import PortBook, fit_columns, place_least_allocated, ports_conflict, topology_domains
from .preemptor import Domain, Preemptor
from .snapshot import Snapshot
from .victims import Unit, victim_cost


class ReprieveFilter(Protocol):
    """kube-scheduler's ``ReprieveFilter`` seam: a fresh, stateful object per reprieval pass.
    ``should_attempt`` False keeps the unit a victim without trying; ``on_reprieved`` is told of
    each unit given back. Policies pass one through ``Problem.reprieve_filter_factory``."""

    def should_attempt(self, unit: Unit) -> bool: ...

    def on_reprieved(self, unit: Unit) -> None: ...


class Candidate:
    """A placement and the victims it needs, comparable by docs/design.md's order."""

    __slots__ = ("assignments", "cost", "domain", "how", "victims")

    def __init__(
        self,
        domain: Domain,
        assignments: list[tuple[int, int]],
        victims: list[int],
        cost: Cost,
        how: str,
    ) -> None:
        self.domain, self.assignments, self.victims, self.cost, self.how = (
            domain,
            assignments,
            victims,
            cost,
            how,
        )

    @property
    def placed(self) -> int:
        return len(self.assignments)

    def rank(self) -> tuple[int, Cost, int]:
        return (-self.placed, self.cost, self.domain.order)


class Problem:
    def __init__(self, snapshot: Snapshot, gang: Preemptor) -> None:
        self.snapshot, self.gang = snapshot, gang
        self.units = snapshot.units
        self.priority = gang.priority
        self.first_eligible = self.units.first_eligible(self.priority)
        self.has_ports = any(snapshot.pods[p].host_ports for p in gang.pending)
        self._free_removed: np.ndarray | None = None
        self._levels: list[int] | None = None
        self.excluded: frozenset[int] = frozenset()  # units this variant of the problem may not evict
        self.reprieve_filter_factory: Callable[[], ReprieveFilter] | None = None

    # -- capacity views -------------------------------------------------------------------------
    @property
    def eligible_count(self) -> int:
        return len(self.units.units) - self.first_eligible

    def is_eligible(self, unit_id: int) -> bool:
        return unit_id >= self.first_eligible and unit_id not in self.excluded

    def sparing(self, units: Iterable[int]) -> Problem:
        """The same problem with these victim units off limits (for gangweb's local search)."""
        variant = Problem(self.snapshot, self.gang)
        variant.excluded = self.excluded | frozenset(units)
        held = self.free_removed().copy()
        for unit_id in variant.excluded - self.excluded:
            for node, req in self.units.units[unit_id].node_req.items():
                held[node] -= req
        variant._free_removed = held
        variant._levels = self._levels
        return variant

    def free_removed(self) -> np.ndarray:
        """Free capacity with every eligible victim gone (read-only; copy before placing)."""
        if self._free_removed is None:
            self._free_removed = self.snapshot.free + self.units.released_below(self.priority)
        return self._free_removed

    def levels(self) -> list[int]:
        """Distinct priorities of eligible victims, lowest first."""
        if self._levels is None:
            self._levels = sorted(set(self.units.priorities[self.first_eligible :].tolist()))
        return self._levels

    def violations(self) -> np.ndarray:
        return self.units.violations(self.priority)

    def port_book(self, removed_all: bool) -> PortBook | None:
        if not self.has_ports:
            return None
        if not removed_all:
            return PortBook(self.snapshot, lambda p: True)
        pod_unit = self.units.pod_unit
        return PortBook(self.snapshot, lambda p: not self.is_eligible(int(pod_unit[p])))

    # -- placements -----------------------------------------------------------------------------
    def place(self, domain: Domain, free: np.ndarray, removed_all: bool) -> list[tuple[int, int]]:
        nodes = place_least_allocated(
            self.snapshot, self.gang.pending, free[domain.nodes], domain.nodes, self.port_book(removed_all)
        )
        return [(p, n) for p, n in zip(self.gang.pending, nodes) if n >= 0]

    def room(self, free: np.ndarray, domains: Sequence[Domain]) -> list[int]:
        """Upper bound on the pending pods each domain can hold (necessary condition, cheap)."""
        if not domains:
            return []
        snap = self.snapshot
        requests = snap.pod_req[self.gang.pending]
        smallest = requests.min(axis=0)
        cols = fit_columns(smallest)
        per_node = np.min(free[:, cols] // smallest[cols], axis=1)
        per_node = np.where(self.gang.static_mask(), np.maximum(per_node, 0), 0)
        if len(domains) == 1:
            return [int(per_node[domains[0].nodes].sum())]
        key = self.gang.group.topology_key
        assert key is not None  # several domains: one per value of the topology label
        _, node_domain = topology_domains(snap, key)
        has = node_domain >= 0
        sums = np.bincount(
            node_domain[has], weights=per_node[has], minlength=max(d.order for d in domains) + 1
        )
        return [int(sums[d.order]) for d in domains]

    def ordered_domains(self, free: np.ndarray, domains: Sequence[Domain]) -> list[Domain]:
        """Domains that can possibly succeed, most room first (then label order)."""
        need = max(self.gang.needed(), 1)
        rooms = self.room(free, domains)
        room = {d.order: min(r, len(self.gang.pending)) for r, d in zip(rooms, domains) if r >= need}
        return sorted((d for d in domains if d.order in room), key=lambda d: (-room[d.order], d.order))

    # -- reprieval ------------------------------------------------------------------------------
    def reprieval_order(self, unit_ids: Iterable[int], pdb_first: bool = True) -> list[int]:
        """PDB violators first, each list most important first (KEP-5710 3.3 step 5)."""
        if not self.units.pod_pdbs or not pdb_first:
            return sorted(unit_ids)
        violations = self.violations()
        return sorted(unit_ids, key=lambda u: (violations[u] == 0, u))

    def reprieve(self, assignments: Sequence[tuple[int, int]], pdb_first: bool = True) -> list[int]:
        """Start with every eligible victim removed and the gang placed; give victims back one at a
        time, most valuable first, while the fixed placement still passes the filters.

        ``pdb_first`` is kube-scheduler's order: units that would break a budget *if every
        candidate went* are given back first. That classification is pessimistic (the budget may be
        consumed by units that end up reprieved), so gangweb also tries plain importance order."""
        snap, units = self.snapshot, self.units.units
        free_removed = self.free_removed()
        slack: dict[int, np.ndarray] = {}
        gang_ports: dict[int, list[tuple[str, str, int]]] = {}
        for pod_idx, node in assignments:
            if node not in slack:
                slack[node] = free_removed[node].copy()
            slack[node] -= snap.pod_req[pod_idx]
            if snap.pods[pod_idx].host_ports:
                gang_ports.setdefault(node, []).extend(snap.pods[pod_idx].host_ports)
        asked: dict[int, np.ndarray] = {}
        for pod_idx, node in assignments:
            asked[node] = asked.get(node, 0) + snap.pod_req[pod_idx]
        cols = {node: fit_columns(total) for node, total in asked.items()}
        touching = {u for node in slack for u in self.units.node_units[node] if self.is_eligible(u)}
        victims = []
        rf = self.reprieve_filter_factory() if self.reprieve_filter_factory else None
        for unit_id in self.reprieval_order(touching, pdb_first):
            unit = units[unit_id]
            if (rf is None or rf.should_attempt(unit)) and self._fits_back(unit, slack, cols, gang_ports):
                for node, req in unit.node_req.items():
                    if node in slack:
                        slack[node] -= req
                if rf is not None:
                    rf.on_reprieved(unit)
            else:
                victims.append(unit_id)
        return victims

    def _fits_back(
        self,
        unit: Unit,
        slack: dict[int, np.ndarray],
        cols: dict[int, np.ndarray],
        gang_ports: dict[int, list[tuple[str, str, int]]],
    ) -> bool:
        snap = self.snapshot
        for node, req in unit.node_req.items():
            if node not in slack:
                continue
            c = cols[node]
            if np.any(slack[node][c] < req[c]):
                return False
            if node in gang_ports:
                ported = [
                    port for p in unit.pods if snap.pod_node[p] == node for port in snap.pods[p].host_ports
                ]
                if ported and ports_conflict(gang_ports[node], ported):
                    return False
        return True

    def candidate(
        self, domain: Domain, assignments: list[tuple[int, int]], victims: list[int], how: str
    ) -> Candidate:
        return Candidate(domain, assignments, sorted(victims), victim_cost(self.units, victims), how)

    # -- plans ----------------------------------------------------------------------------------
    def plan(
        self,
        policy: str,
        feasible: bool,
        reason: str,
        candidate: Candidate | None = None,
        *,
        why: Outcome | None = None,
        **stats: Any,
    ) -> Plan:
        """The plan to return; an infeasible one names its ``why``: an infeasible ``Outcome``."""
        if not feasible and (not isinstance(why, Outcome) or why.feasible or why is Outcome.UNKNOWN):
            codes = [o.value for o in Outcome if not o.feasible and o is not Outcome.UNKNOWN]
            raise ValueError(f"an infeasible plan needs one of {codes} as its why, got {why!r}")
        snap = self.snapshot
        plan = Plan(
            gang_key=self.gang.key,
            policy=policy,
            feasible=feasible,
            reason=reason,
            pending=len(self.gang.pending),
            stats=stats,
            why=None if feasible else why,
            preemptor_priority=self.priority,
        )
        if candidate is None:
            plan.cost = victim_cost(self.units, [])
            return plan
        plan.placement = {snap.pods[p].key: snap.nodes[n].name for p, n in candidate.assignments}
        plan.domain = candidate.domain.name
        plan.cost = candidate.cost
        if feasible:
            plan.victims = self.describe_victims(candidate.victims)
        return plan

    def describe_victims(self, unit_ids: Sequence[int]) -> list[Victim]:
        snap, units = self.snapshot, self.units
        ordered = sorted(unit_ids)
        counts = (
            units.count_violations([units.units[u] for u in ordered])
            if units.pod_pdbs
            else [0] * len(ordered)
        )
        out = []
        for unit_id, violations in zip(ordered, counts):
            unit = units.units[unit_id]
            first = snap.pods[unit.pods[0]] if unit.pods else None
            out.append(
                Victim(
                    kind=unit.kind,
                    namespace=unit.namespace,
                    name=unit.name,
                    priority=unit.priority,
                    pods=sorted(snap.pods[p].key for p in unit.pods),
                    gpus=unit.gpus,
                    lost_gpu_seconds=round(units.gpu_seconds[unit_id], 3),
                    pdb_violations=violations,
                    priority_class=first.priority_class if first is not None else None,
                    running_seconds=(
                        None
                        if unit.earliest_start is None
                        else round(max(snap.now - unit.earliest_start, 0.0), 3)
                    ),
                )
            )
        out.sort(key=lambda v: (v.namespace, v.name, v.kind))
        return out
