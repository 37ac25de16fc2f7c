"""Exact search over victim units: prove the heuristic's plan the cheapest, or find the one that is.

Starts from the heuristic's plan as the incumbent and searches every set of eligible victim units that
could beat it, in every topology domain, under docs/design.md's cost order. What makes it cheap is the
order itself: a better set may hold no unit whose cost alone is already no better, and a set of two or
more units costs at least the sum of its cheapest priorities, so most units fall out before the search.

- Lone units are checked for the whole cluster at once with numpy: per (unit, domain), the pod slots its
  eviction frees there.
- Sets of two or more units: a depth-first branch-and-bound per domain over the units that may still
  belong to a better set, cheapest first, pruned by a lower bound on the cost (the fewest units that can
  free the missing slots, and the cheapest priorities among those left). A domain holding more than
  ``MAX_UNITS`` such units is not searched (the plan says ``heuristic:bound``), and the whole search stops
  after ``MAX_STEPS`` branch-and-bound steps (``heuristic:budget``): a count, not a clock, so the same
  snapshot gives the same plan on any machine.

Its model is the engine's placement for a gang whose pending pods share one request and one set of node
filters (identical pods fill a node's slots, so slot counting is exact) and whose candidates' costs only
grow as units are added (no negative priorities; no pod under two disruption budgets, where the order
budgets are spent in could make a larger set cheaper). Anything else is left to the heuristic
(``heuristic:unmodelled``), and so is a plan that places fewer than all pending pods (``heuristic:partial``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ...contract import BOUND, BUDGET, PARTIAL, PROVEN, UNMODELLED
from ...placement import fit_columns, node_mask, place_least_allocated, topology_domains
from ...victims import victim_cost

if TYPE_CHECKING:
    from ...evaluation import Candidate, Problem
    from ...preemptor import Domain

MAX_UNITS = 40  # units that may belong to a better plan, per domain, beyond which a domain is not searched
MAX_STEPS = 5_000  # branch-and-bound steps per plan, over all domains


class Found(NamedTuple):
    """The plan after the search and what the search concluded (``contract.OPTIMALITY``)."""

    best: Candidate
    optimality: str
    steps: int


class _OutOfSteps(Exception):
    pass


def _slots(rows: np.ndarray, request: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Pods of this request each free row holds (0 where it holds none)."""
    slots: np.ndarray = np.maximum(np.min(rows[..., cols] // request[cols], axis=-1), 0)
    return slots


def _lex_less(arrays: Sequence[np.ndarray], bound: Sequence[float]) -> np.ndarray:
    """Element-wise: is (arrays[0][i], arrays[1][i], ...) lexicographically below ``bound``?"""
    less = np.zeros(len(arrays[0]), dtype=bool)
    tied = np.ones(len(arrays[0]), dtype=bool)
    for values, limit in zip(arrays, bound):
        less |= tied & (values < limit)
        tied &= values == limit
    return less


def unmodelled(problem: Problem) -> str | None:
    """Why the exact search cannot vouch for this problem (None: it can)."""
    snap, gang, index = problem.snapshot, problem.gang, problem.units
    pods = [snap.pods[p] for p in gang.pending]
    if (
        len({(snap.pod_req[p].tobytes(), pod.placement_signature()) for p, pod in zip(gang.pending, pods)})
        > 1
    ):
        return "pending pods of different shapes"
    if problem.has_ports:
        return "host ports"
    if problem.excluded:
        return "units excluded"
    eligible = index.priorities[problem.first_eligible :]
    if len(eligible) and int(eligible.min()) < 0:
        return "negative priorities"
    for pod_idx, budgets in index.pod_pdbs.items():
        if len(budgets) > 1 and index.pod_unit[pod_idx] >= problem.first_eligible:
            return "a pod under two disruption budgets"
    return None


def _unit_arrays(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: PDB violations when evicted alone, and lost GPU-seconds (cached per snapshot)."""
    snap, index = problem.snapshot, problem.units
    cached = snap.cache.get("exact-units")
    if cached is None:
        alone = np.zeros(len(index.units), dtype=np.int64)
        if index.pod_pdbs:
            for unit in index.units:
                if unit.pdb_pods:
                    alone[unit.index] = index.count_violations([unit])[0]
        seconds = np.array(index.gpu_seconds, dtype=np.float64)
        cached = snap.cache["exact-units"] = (alone, seconds)
    return cached


def search(problem: Problem, incumbent: Candidate, domains: Sequence[Domain]) -> Found:
    """The cheapest plan placing every pending pod, starting from ``incumbent``, and whether it is proven."""
    gang = problem.gang
    if incumbent.placed < len(gang.pending):
        return Found(incumbent, PARTIAL, 0)
    if unmodelled(problem) is not None:
        return Found(incumbent, UNMODELLED, 0)
    return _Search(problem, incumbent, domains).run()


class _Search:
    def __init__(self, problem: Problem, incumbent: Candidate, domains: Sequence[Domain]) -> None:
        snap, gang = problem.snapshot, problem.gang
        self.problem, self.snap, self.index = problem, snap, problem.units
        self.best = incumbent
        self.steps = 0
        self.need = len(gang.pending)
        first = gang.pending[0]
        self.request = snap.pod_req[first]
        self.cols = fit_columns(self.request)
        self.domains = {d.order: d for d in domains}
        if gang.group.topology_key:
            _, node_domain = topology_domains(snap, gang.group.topology_key)
        else:
            node_domain = np.zeros(len(snap.nodes), dtype=np.int64)
        # One slot per topology value (not only the gang's domains: running pods may allow just one), and a
        # last one that nodes without the label (-1) hit.
        wanted = np.zeros(max(max(self.domains), int(node_domain.max(initial=0))) + 2, dtype=bool)
        wanted[list(self.domains)] = True
        in_domains = np.zeros(len(snap.nodes), dtype=bool)  # a domain may hold part of its value's nodes
        for d in domains:
            in_domains[d.nodes] = True
        self.usable = (
            node_mask(snap, snap.pods[first]) & (node_domain >= 0) & wanted[node_domain] & in_domains
        )
        self.node_domain = node_domain
        self.base = np.where(self.usable, _slots(snap.free, self.request, self.cols), 0)
        self.domain_base = np.bincount(
            node_domain[self.usable], weights=self.base[self.usable], minlength=len(wanted)
        ).astype(np.int64)
        self.alone, self.seconds = _unit_arrays(problem)
        index = self.index
        self.entries = np.flatnonzero(
            (index.entry_unit >= problem.first_eligible) & self.usable[index.entry_node]
        )
        eligible = index.priorities[problem.first_eligible :]
        self.lowest = int(eligible.min()) if len(eligible) else 0

    def _cost_arrays(self, units: np.ndarray, extra_units: int) -> list[np.ndarray]:
        """Lower bounds on the cost of a plan holding each of ``units`` and ``extra_units`` more."""
        index = self.index
        priority = index.priorities[units]
        return [
            self.alone[units],
            priority,
            priority + extra_units * self.lowest,
            np.full(len(units), 1 + extra_units),
            index.unit_pods[units] + extra_units,
            self.seconds[units] - 0.001,  # below its rounding to milliseconds
        ]

    def run(self) -> Found:
        bounded = False
        try:
            self._lone_units()
            bounded = self._sets()
        except _OutOfSteps:
            return Found(self.best, BUDGET, self.steps)
        return Found(self.best, BOUND if bounded else PROVEN, self.steps)

    # -- one unit -----------------------------------------------------------------------------------
    def _lone_units(self) -> None:
        snap, index, entries = self.snap, self.index, self.entries
        units = index.entry_unit[entries]
        keep = _lex_less(self._cost_arrays(units, 0), tuple(self.best.cost))
        entries, units = entries[keep], units[keep]
        if not len(entries):
            return
        nodes = index.entry_node[entries]
        gains = (
            _slots(snap.free[nodes] + index.entry_req[entries], self.request, self.cols) - self.base[nodes]
        )
        width = len(self.domain_base)
        pairs, inverse = np.unique(units * width + self.node_domain[nodes], return_inverse=True)
        gained = np.bincount(inverse.reshape(-1), weights=gains)
        pair_unit, pair_domain = pairs // width, pairs % width
        enough = self.domain_base[pair_domain] + gained >= self.need
        pair_unit, pair_domain = pair_unit[enough], pair_domain[enough]
        if not len(pair_unit):
            return
        order = np.lexsort(
            (
                pair_domain,
                pair_unit,
                self.seconds[pair_unit],
                index.unit_pods[pair_unit],
                index.priorities[pair_unit],
                self.alone[pair_unit],
            )
        )
        first = int(order[0])
        self._offer([int(pair_unit[first])], self.domains[int(pair_domain[first])])

    def _offer(self, unit_ids: list[int], domain: Domain) -> bool:
        """Take this victim set in this domain if it is cheaper than the best plan so far."""
        cost = victim_cost(self.index, unit_ids)
        if not cost < self.best.cost:
            return False
        snap, problem = self.snap, self.problem
        local = snap.free[domain.nodes]
        position = {int(n): i for i, n in enumerate(domain.nodes.tolist())}
        for unit_id in unit_ids:
            for node, req in self.index.units[unit_id].node_req.items():
                if node in position:
                    local[position[node]] += req
        nodes = place_least_allocated(snap, problem.gang.pending, local, domain.nodes)
        assignments = [(p, n) for p, n in zip(problem.gang.pending, nodes) if n >= 0]
        if len(assignments) < self.need:  # slot counting and placement disagree: keep what is known to work
            return False
        self.best = problem.candidate(domain, assignments, unit_ids, "exact search over victim units")
        return True

    # -- two units or more --------------------------------------------------------------------------
    def _sets(self) -> bool:
        """Branch and bound per domain; True when a domain had too many units to search."""
        snap, index = self.snap, self.index
        entries = self.entries
        units = index.entry_unit[entries]
        keep = _lex_less(self._cost_arrays(units, 1), tuple(self.best.cost))
        entries, units = entries[keep], units[keep]
        if not len(entries):
            return False
        nodes = index.entry_node[entries]
        # Room with every such unit gone: a domain that cannot hold the gang then is done.
        released = np.zeros((len(snap.nodes), snap.free.shape[1]), dtype=np.int64)
        np.add.at(released, nodes, index.entry_req[entries])
        touched = np.unique(nodes)
        ceiling = self.base.copy()
        ceiling[touched] = _slots(snap.free[touched] + released[touched], self.request, self.cols)
        room = np.bincount(
            self.node_domain[self.usable], weights=ceiling[self.usable], minlength=len(self.domain_base)
        )
        bounded = False
        domains_of = self.node_domain[nodes]
        potential = ceiling - self.base
        for order in sorted(set(domains_of.tolist())):
            if room[order] < self.need:
                continue
            here = domains_of == order
            members = sorted(
                set(units[here].tolist()),
                key=lambda u: (index.priorities[u], index.unit_pods[u], self.seconds[u], u),
            )
            if len(members) < 2:
                continue
            gains = sorted(
                (
                    sum(
                        int(potential[n])
                        for n in index.units[u].node_req
                        if self.usable[n] and self.node_domain[n] == order
                    )
                    for u in members
                ),
                reverse=True,
            )
            prefix = list(accumulate(gains))
            if not self._may_beat(order, members, prefix):
                continue
            if len(members) > MAX_UNITS:
                bounded = True
                continue
            self._branch(self.domains[order], members, prefix)
        return bounded

    def _fewest(self, prefix: list[int], missing: int) -> int | None:
        """The fewest units whose slot gains can cover ``missing`` slots (None: none can)."""
        k = bisect_left(prefix, missing)
        return None if k >= len(prefix) else k + 1

    def _may_beat(self, order: int, members: list[int], prefix: list[int]) -> bool:
        k = self._fewest(prefix, self.need - int(self.domain_base[order]))
        if k is None:
            return False
        priorities = [int(self.index.priorities[u]) for u in members[: max(k, 2)]]
        floor = (0, priorities[-1], sum(priorities), max(k, 2))
        return floor <= tuple(self.best.cost)[:4]

    def _branch(self, domain: Domain, members: list[int], prefix: list[int]) -> None:
        _Branch(self, domain, members, prefix).visit(0)


class _Branch:
    """Depth-first branch and bound over one domain's units, cheapest first: take unit i, or leave it.
    Plain methods, no recursive closure: a closure that refers to itself is a reference cycle, and the
    snapshot it reaches would wait for the cyclic collector (``caching/heap.py``)."""

    def __init__(self, search: _Search, domain: Domain, members: list[int], prefix: list[int]) -> None:
        snap, index = search.snap, search.index
        cols = search.cols.tolist()
        in_domain = [int(n) for n in domain.nodes.tolist() if search.usable[n]]
        self.search, self.domain, self.members, self.prefix = search, domain, members, prefix
        self.request: list[int] = search.request[search.cols].tolist()
        self.have = {n: snap.free[n][search.cols].tolist() for n in in_domain}
        self.node_slots = {n: int(search.base[n]) for n in in_domain}
        self.held = [
            [(n, [req[c] for c in cols]) for n, req in index.units[u].node_req_t.items() if n in self.have]
            for u in members
        ]
        self.priorities = [int(index.priorities[u]) for u in members]
        self.sums = [0, *accumulate(self.priorities)]
        self.pods = [int(index.unit_pods[u]) for u in members]
        self.budgets = [[index.pod_pdbs[p][0] for p in index.units[u].pdb_pods] for u in members]
        self.allowed = [max(pdb.allowed, 0) for pdb in snap.pdbs]
        self.spent = [0] * len(self.allowed)
        self.chosen: list[int] = []
        self.slots = int(search.domain_base[domain.order])
        # What the nodes would hold with every unit not yet left out gone: below the need, no set here fits.
        self.reach = {n: list(row) for n, row in self.have.items()}
        for i in range(len(members)):
            for node, amounts in self.held[i]:
                self.reach[node] = [r + a for r, a in zip(self.reach[node], amounts)]
        self.reach_slots = {n: self._slots_of(self.reach, n) for n in in_domain}
        self.reachable = sum(self.reach_slots.values())
        self.violations = self.priority_sum = self.pod_sum = 0

    def _slots_of(self, rows: dict[int, list[int]], node: int) -> int:
        return max(0, min([h // r for h, r in zip(rows[node], self.request)]))

    def _apply(self, i: int, sign: int) -> None:
        for node, amounts in self.held[i]:
            row = self.have[node]
            for c, amount in enumerate(amounts):
                row[c] += sign * amount
            after = self._slots_of(self.have, node)
            self.slots += after - self.node_slots[node]
            self.node_slots[node] = after
        for pdb in self.budgets[i]:  # one budget per pod here (``unmodelled``): violations add up per budget
            if sign > 0:
                self.spent[pdb] += 1
                self.violations += self.spent[pdb] > self.allowed[pdb]
            else:
                self.violations -= self.spent[pdb] > self.allowed[pdb]
                self.spent[pdb] -= 1
        self.priority_sum += sign * self.priorities[i]
        self.pod_sum += sign * self.pods[i]

    def _leave_out(self, i: int, sign: int) -> None:
        """Unit i left out (sign -1) or back in reach (+1)."""
        for node, amounts in self.held[i]:
            row = self.reach[node]
            for c, amount in enumerate(amounts):
                row[c] += sign * amount
            after = self._slots_of(self.reach, node)
            self.reachable += after - self.reach_slots[node]
            self.reach_slots[node] = after

    def visit(self, i: int) -> None:
        search = self.search
        search.steps += 1
        if search.steps > MAX_STEPS:
            raise _OutOfSteps
        if self.slots >= search.need:
            if len(self.chosen) >= 2:  # lone units were all checked before
                search._offer([self.members[j] for j in self.chosen], self.domain)
            return  # any larger set costs more
        k = search._fewest(self.prefix, search.need - self.slots)
        if k is None or i + k > len(self.members) or self.reachable < search.need:
            return
        # The cheapest k units left are the next k (cheapest first): a floor on any set that gets there.
        floor = (
            self.violations,
            self.priorities[i + k - 1],
            self.priority_sum + self.sums[i + k] - self.sums[i],
            max(len(self.chosen) + k, 2),
            self.pod_sum + k,
        )
        if floor > tuple(search.best.cost)[:5]:
            return
        self.chosen.append(i)
        self._apply(i, 1)
        self.visit(i + 1)
        self._apply(i, -1)
        self.chosen.pop()
        self._leave_out(i, -1)
        self.visit(i + 1)
        self._leave_out(i, 1)
