"""Cost-aware gang placement: put each pod where making room is cheapest.

For every candidate node, the cheapest victim set that frees room for the pod is found the way
reprieval does it on one node (remove every eligible unit there, give back the most valuable
first while the pod still fits). Nodes wait in a heap keyed by that cost; evicting a ``disruptionMode:
all`` unit frees its other nodes too, so those are re-costed. Exact costing is lazy: nodes are
visited by the cheapest priority tier that could make room (computed with numpy for the whole
domain), and only as many as the heap needs.
"""

from __future__ import annotations

import heapq
from itertools import combinations
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ...contract import NO_VICTIM_COST, NO_VICTIM_PRIORITY, Cost
from ...placement import fit_columns, node_mask, ports_conflict

if TYPE_CHECKING:
    from ...evaluation import Problem
    from ...preemptor import Domain
    from ...typed_objects import HostPort


EXACT_NODE_UNITS = 6  # up to this many evictable units on a node, its cheapest victim set is exact


class NodeCost(NamedTuple):
    """What one more pod on a node costs: the victims' cost and the units to evict."""

    cost: Cost
    units: list[int]


class Queued(NamedTuple):
    """A costed node in a shape's heap, cheapest first; stale once the node's version moved on."""

    cost: Cost
    node: int
    version: int
    units: list[int]


class _Shape:
    """Pods with the same request and node filters share one heap of costed nodes."""

    def __init__(self, problem: Problem, pod_idx: int, domain: Domain) -> None:
        snap = problem.snapshot
        self.pod = pod_idx
        self.request = snap.pod_req[pod_idx]
        self.cols = fit_columns(self.request)
        self.cols_list = self.cols.tolist()
        self.need = self.request[self.cols].tolist()
        nodes = domain.nodes[node_mask(snap, snap.pods[pod_idx])[domain.nodes]]
        req, cols = self.request[self.cols], self.cols
        base = snap.free[nodes][:, cols]
        unreachable = np.iinfo(np.int64).max
        # The lowest priority tier whose eviction (on that node alone) could make room.
        level = np.full(len(nodes), unreachable, dtype=np.int64)
        level[np.all(base >= req, axis=1)] = NO_VICTIM_PRIORITY
        for priority in problem.levels():
            released = problem.units.released_below(priority + 1)[nodes][:, cols]
            reach = (level == unreachable) & np.all(base + released >= req, axis=1)
            level[reach] = priority
        keep = level != unreachable
        nodes, level = nodes[keep], level[keep]
        # Within a tier, visit first the nodes whose evictable units are fewest and smallest: a
        # cheap proxy for the exact cost, so the few nodes costed exactly are the right ones.
        index = problem.units
        entries = index.entries_on(nodes)
        ent_unit = index.entry_unit[entries]
        position = np.searchsorted(nodes, index.entry_node[entries]) if len(nodes) else entries
        reached = (
            (ent_unit >= problem.first_eligible) & (index.priorities[ent_unit] <= level[position])
            if len(entries)
            else np.zeros(0, dtype=bool)
        )
        weight = np.zeros(len(nodes), dtype=np.int64)
        if reached.any():
            weight = np.bincount(
                position[reached],
                weights=1_000_000 + index.unit_pods[ent_unit[reached]],
                minlength=len(nodes),
            ).astype(np.int64)
        order = np.lexsort((nodes, weight, level))
        self.order = nodes[order].tolist()
        self.levels = level[order].tolist()
        self.allowed = set(nodes.tolist())
        self.cursor = 0
        self.heap: list[Queued] = []
        self.seen: set[int] = set()


class CostAwarePlacer:
    def __init__(self, problem: Problem, domain: Domain) -> None:
        self.problem, self.domain = problem, domain
        self.snap = problem.snapshot
        self.units = problem.units
        self.free: dict[int, np.ndarray] = {}  # rows changed so far (copy-on-write over snapshot.free)
        self.evicted: set[int] = set()
        self.version: dict[int, int] = {}
        self.ports: dict[int, list[HostPort]] = {}
        self.violations = problem.violations()

    def row(self, node: int) -> np.ndarray:
        row = self.free.get(node)
        if row is None:
            row = self.snap.free[node].copy()
            self.free[node] = row
        return row

    def _present_ports(self, node: int, also_gone: set[int]) -> list[HostPort]:
        pods = self.snap.pods
        return [
            port
            for p in self.snap.pods_by_node[node]
            if pods[p].host_ports
            and int(self.units.pod_unit[p]) not in self.evicted
            and int(self.units.pod_unit[p]) not in also_gone
            for port in pods[p].host_ports
        ] + self.ports.get(node, [])

    def _holds_port(self, unit_id: int, node: int, wanted: tuple[HostPort, ...]) -> bool:
        pods = self.snap.pods
        held = [
            port
            for p in self.units.units[unit_id].pods
            if self.snap.pod_node[p] == node
            for port in pods[p].host_ports
        ]
        return bool(held) and ports_conflict(wanted, held)

    def node_cost(self, node: int, shape: _Shape) -> NodeCost | None:
        """What one more pod of ``shape`` on ``node`` costs, or None when no eviction makes room."""
        cols, need = shape.cols_list, shape.need
        pod = self.snap.pods[shape.pod]
        row = self.free.get(node)
        have = (row if row is not None else self.snap.free[node])[shape.cols].tolist()
        if all(h >= n for h, n in zip(have, need)) and not (
            pod.host_ports and ports_conflict(pod.host_ports, self._present_ports(node, set()))
        ):
            return NodeCost(NO_VICTIM_COST, [])
        units = self.units.units
        first, excluded = self.problem.first_eligible, self.problem.excluded
        candidates = [
            u
            for u in self.units.node_units[node]
            if u >= first and u not in self.evicted and u not in excluded
        ]
        if not candidates:
            return None
        slack = have
        for u in candidates:
            held = units[u].node_req_t[node]
            slack = [s + held[c] for s, c in zip(slack, cols)]
        if any(s < n for s, n in zip(slack, need)):
            return None
        chosen = []
        for unit_id in self.problem.reprieval_order(candidates):
            held = units[unit_id].node_req_t[node]
            after = [s - held[c] for s, c in zip(slack, cols)]
            if all(a >= n for a, n in zip(after, need)) and not (
                pod.host_ports and self._holds_port(unit_id, node, pod.host_ports)
            ):
                slack = after
            else:
                chosen.append(unit_id)
        if pod.host_ports and ports_conflict(pod.host_ports, self._present_ports(node, set(chosen))):
            return None  # a port is held by a pod this preemptor may not evict
        if len(chosen) > 1 and len(candidates) <= EXACT_NODE_UNITS and not pod.host_ports:
            return self._cheapest_subset(node, candidates, have, cols, need)
        picked = [units[u] for u in chosen]
        cost = Cost(
            int(sum(self.violations[u] for u in chosen)),
            max(u.priority for u in picked),
            sum(u.priority for u in picked),
            len(picked),
            sum(len(u.pods) for u in picked),
            round(sum(self.units.gpu_seconds[u] for u in chosen), 3),
        )
        return NodeCost(cost, chosen)

    def _cost(self, chosen: list[int]) -> Cost:
        picked = [self.units.units[u] for u in chosen]
        return Cost(
            int(sum(self.violations[u] for u in chosen)),
            max(u.priority for u in picked),
            sum(u.priority for u in picked),
            len(picked),
            sum(len(u.pods) for u in picked),
            round(sum(self.units.gpu_seconds[u] for u in chosen), 3),
        )

    def _cheapest_subset(
        self, node: int, candidates: list[int], have: list[int], cols: list[int], need: list[int]
    ) -> NodeCost:
        """Every subset of the node's few evictable units: the cheapest that makes room. Greedy reprieval
        gives back the most important unit first, which can keep two cheaper ones evicted."""
        held = [self.units.units[u].node_req_t[node] for u in candidates]
        best: NodeCost | None = None
        fitting: list[set[int]] = []
        for size in range(1, len(candidates) + 1):
            for subset in combinations(range(len(candidates)), size):
                if any(f <= set(subset) for f in fitting):
                    continue  # a superset of a set that makes room costs more
                freed = [h + sum(held[i][c] for i in subset) for h, c in zip(have, cols)]
                if all(f >= n for f, n in zip(freed, need)):
                    fitting.append(set(subset))
                    chosen = [candidates[i] for i in subset]
                    cost = self._cost(chosen)
                    if best is None or cost < best.cost:
                        best = NodeCost(cost, chosen)
        assert best is not None  # the whole set fits (checked by the caller), so some subset does
        return best

    def _push(self, shape: _Shape, node: int) -> None:
        shape.seen.add(node)
        costed = self.node_cost(node, shape)
        if costed is not None:
            heapq.heappush(shape.heap, Queued(costed.cost, node, self.version.get(node, 0), costed.units))

    def _fill(self, shape: _Shape, remaining: int) -> None:
        """Cost more nodes while an uncosted one could still beat the heap's best."""
        batch, costed = 2 * remaining + 8, 0
        while shape.cursor < len(shape.order):
            if shape.heap:
                best = shape.heap[0].cost
                # An uncosted node costs at least (no PDB violation, its tier's priority).
                best_key, bound = (
                    (best.pdb_violations, best.highest_victim_priority),
                    (0, shape.levels[shape.cursor]),
                )
                if best_key < bound or (best_key == bound and costed >= batch):
                    return
            end = min(len(shape.order), shape.cursor + batch)
            for node in shape.order[shape.cursor : end]:
                if node not in shape.seen:
                    self._push(shape, node)
            costed += end - shape.cursor
            shape.cursor = end

    def place(self) -> tuple[list[tuple[int, int]], list[int]]:
        shapes: dict[tuple[bytes, tuple[object, ...], tuple[HostPort, ...]], _Shape] = {}
        assignments = []
        pending = self.problem.gang.pending
        for position, pod_idx in enumerate(pending):
            key = (
                self.snap.pod_req[pod_idx].tobytes(),
                self.snap.pods[pod_idx].placement_signature(),
                self.snap.pods[pod_idx].host_ports,
            )
            shape = shapes.get(key)
            if shape is None:
                shape = shapes[key] = _Shape(self.problem, pod_idx, self.domain)
                for node in self.free:  # rows changed for earlier shapes are costed exactly
                    if node in shape.allowed:
                        self._push(shape, node)
            chosen = None
            while True:
                self._fill(shape, len(pending) - position)
                if not shape.heap:
                    break
                top = heapq.heappop(shape.heap)
                if top.version == self.version.get(top.node, 0):
                    chosen = top
                    break
            if chosen is None:
                continue
            node, units = chosen.node, chosen.units
            touched = {node}
            for unit_id in units:
                self.evicted.add(unit_id)
                for other, req in self.units.units[unit_id].node_req.items():
                    self.row(other)[:] += req
                    touched.add(other)
            self.row(node)[:] -= self.snap.pod_req[pod_idx]
            if self.snap.pods[pod_idx].host_ports:
                self.ports.setdefault(node, []).extend(self.snap.pods[pod_idx].host_ports)
            assignments.append((pod_idx, node))
            for other in touched:
                self.version[other] = self.version.get(other, 0) + 1
                for each in shapes.values():
                    if other in each.allowed:
                        self._push(each, other)
        return assignments, sorted(self.evicted)
