"""Victim units (KEP-5710 section 3.3): what gets preempted together, how important it is, and PDBs.

A unit is the highest ``disruptionMode: all`` ancestor of a pod's group (all its scheduled pods,
cluster-wide), or the pod alone. Units are built once per snapshot and kept in
``MoreImportantVictim`` order, most important first, so that "every victim below priority P" is a
suffix of that list and never needs sorting again.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .contract import NO_VICTIM_COST, NO_VICTIM_PRIORITY, Cost
from .typed_objects import ALL

if TYPE_CHECKING:
    from .snapshot import Snapshot
    from .typed_objects import Group, Pod

RANK = {"Pod": 1, "PodGroup": 2, "CompositePodGroup": 3}
__all__ = ["NO_VICTIM_PRIORITY", "RANK", "Unit", "UnitIndex", "top_all_ancestor", "unit_key", "victim_cost"]


class Unit:
    """One victim: preempted (or reprieved) as a whole."""

    __slots__ = (
        "earliest_start",
        "gpu_seconds",
        "gpus",
        "index",
        "kind",
        "name",
        "namespace",
        "node_req",
        "node_req_t",
        "pdb_pods",
        "pods",
        "priority",
        "tiebreak",
        "type_rank",
    )

    def __init__(
        self, kind: str, namespace: str, name: str, type_rank: int, priority: int, pods: list[int]
    ) -> None:
        self.kind, self.namespace, self.name = kind, namespace, name
        self.type_rank, self.priority, self.pods = type_rank, priority, pods
        self.index = -1
        self.node_req: dict[int, np.ndarray] = {}
        self.pdb_pods: list[int] = []

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def importance_key(self) -> tuple:
        """Sorts most important first: MoreImportantVictim (priority, type rank, size, age, UID)."""
        start = self.earliest_start if self.earliest_start is not None else float("inf")
        return (-self.priority, -self.type_rank, -len(self.pods), start, self.tiebreak)


def top_all_ancestor(snapshot: Snapshot, pod: Pod) -> Group | None:
    """The highest ``disruptionMode: all`` group above the pod: its victim unit (None: the pod alone)."""
    group = snapshot.group_of(pod)
    top_all = None
    if group is not None:
        for ancestor in snapshot.ancestors(group):
            if ancestor.disruption == ALL:
                top_all = ancestor
    return top_all


def unit_key(snapshot: Snapshot, pod_idx: int) -> tuple[str, str]:
    """Which victim unit a bound pod belongs to, before the units are built."""
    pod = snapshot.pods[pod_idx]
    top = top_all_ancestor(snapshot, pod)
    return (top.kind, top.key) if top is not None else ("Pod", pod.key)


class UnitIndex:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        pods = snapshot.pods
        by_ancestor: dict[tuple[str, str], list[int]] = {}
        singles: list[Unit] = []
        for pod_idx in snapshot.bound.tolist():
            pod = pods[pod_idx]
            top_all = top_all_ancestor(snapshot, pod)
            if top_all is None:
                rank = RANK["PodGroup"] if pod.group_name else RANK["Pod"]  # the KEP's ranking quirk
                singles.append(
                    Unit("Pod", pod.namespace, pod.name, rank, snapshot.pod_priority[pod_idx], [pod_idx])
                )
            else:
                by_ancestor.setdefault((top_all.kind, top_all.key), []).append(pod_idx)
        units = singles
        for (kind, key), members in by_ancestor.items():
            namespace, name = key.split("/", 1)
            units.append(Unit(kind, namespace, name, RANK[kind], snapshot.pod_priority[members[0]], members))
        self._finish(units)

    def _finish(self, units: list[Unit]) -> None:
        snap = self.snapshot
        gpu_per_pod = snap.gpus(snap.pod_req).tolist() if len(snap.pods) else []
        started = [pod.start_time for pod in snap.pods]
        # GPU-seconds a pod has run (lost if it is evicted now); pods without a start time lose nothing.
        lost = [
            g * (snap.now - t if snap.now > t else 0.0) if t is not None else 0.0
            for g, t in zip(gpu_per_pod, started)
        ]
        uids = [pod.uid for pod in snap.pods]
        pod_node = snap.pod_node.tolist()
        pod_pdbs = self._pod_pdbs()
        for unit in units:
            unit.pods.sort()
            starts = [started[p] for p in unit.pods if started[p] is not None]
            unit.earliest_start = min(starts) if starts else None
            unit.tiebreak = min(uids[p] for p in unit.pods)
            unit.gpus = sum(gpu_per_pod[p] for p in unit.pods)
            unit.gpu_seconds = float(sum(lost[p] for p in unit.pods))
            for p in unit.pods:
                node = pod_node[p]
                if node in unit.node_req:
                    unit.node_req[node] = unit.node_req[node] + snap.pod_req[p]
                else:
                    unit.node_req[node] = snap.pod_req[p]
            # Plain tuples too: per-node arithmetic on a handful of numbers is faster without numpy.
            unit.node_req_t = {node: tuple(req.tolist()) for node, req in unit.node_req.items()}
            unit.pdb_pods = [p for p in unit.pods if p in pod_pdbs]
        units.sort(key=Unit.importance_key)
        for i, unit in enumerate(units):
            unit.index = i
        self.units = units
        self.pod_pdbs = pod_pdbs
        self.priorities = np.array([u.priority for u in units], dtype=np.int64)
        self.unit_pods = np.array([len(u.pods) for u in units], dtype=np.int64)
        self._neg_priorities = [-u.priority for u in units]
        self.pod_unit = np.full(len(snap.pods), -1, dtype=np.int64)
        self.node_units: list[list[int]] = [[] for _ in snap.nodes]
        for unit in units:
            self.pod_unit[unit.pods] = unit.index
            for node in unit.node_req:
                self.node_units[node].append(unit.index)
        self.pod_unit_priority = np.zeros(len(snap.pods), dtype=np.int64)
        held = np.flatnonzero(self.pod_unit >= 0)
        self.pod_unit_priority[held] = self.priorities[self.pod_unit[held]]
        # One row per (unit, node) it occupies: lets whole-domain questions about units run in numpy.
        entries = sorted(
            ((unit.index, node, req) for unit in units for node, req in unit.node_req.items()),
            key=lambda e: e[1],
        )
        self.entry_unit = np.array([e[0] for e in entries], dtype=np.int64)
        self.entry_node = np.array([e[1] for e in entries], dtype=np.int64)
        self.entry_req = (
            np.array([e[2] for e in entries], dtype=np.int64)
            if entries
            else np.zeros((0, len(snap.resources)), dtype=np.int64)
        )
        # Entries are sorted by node: node n owns entries[entry_start[n]:entry_start[n + 1]].
        self.entry_start = np.searchsorted(self.entry_node, np.arange(len(snap.nodes) + 1))
        self._released: dict[int, np.ndarray] = {}
        self._violations: dict[int, np.ndarray] = {}

    def entries_on(self, nodes: np.ndarray) -> np.ndarray:
        """Indices of the (unit, node) entries on these nodes."""
        starts, ends = self.entry_start[nodes], self.entry_start[nodes + 1]
        lengths = ends - starts
        if not lengths.sum():
            return np.zeros(0, dtype=np.int64)
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        return offsets + np.arange(int(lengths.sum()))

    def _pod_pdbs(self) -> dict[int, list[int]]:
        snap = self.snapshot
        if not snap.pdbs:
            return {}
        # Index budgets by (namespace, one matchLabels pair) so each pod is only checked against
        # budgets that can match it; selectors without matchLabels are checked for every pod.
        keyed: dict[tuple[str, str, str], list[int]] = {}
        unkeyed: dict[str, list[int]] = {}
        for i, pdb in enumerate(snap.pdbs):
            if pdb.selector.matches_nothing:
                continue
            if pdb.selector.match_labels:
                key, value = sorted(pdb.selector.match_labels.items())[0]
                keyed.setdefault((pdb.namespace, key, value), []).append(i)
            else:
                unkeyed.setdefault(pdb.namespace, []).append(i)
        out: dict[int, list[int]] = {}
        for pod_idx in snap.bound.tolist():
            pod = snap.pods[pod_idx]
            possible = list(unkeyed.get(pod.namespace, ()))
            for label in pod.labels.items():
                possible += keyed.get((pod.namespace, *label), ())
            matches = sorted(
                i
                for i in set(possible)
                if pod.name not in snap.pdbs[i].disrupted and snap.pdbs[i].selector.matches(pod.labels)
            )
            if matches:
                out[pod_idx] = matches
        return out

    # -- per preemptor priority -----------------------------------------------------------------
    def first_eligible(self, preemptor_priority: int) -> int:
        """Units ``[first_eligible:]`` have priority strictly below the preemptor's."""
        return bisect_right(self._neg_priorities, -preemptor_priority)

    def eligible(self, preemptor_priority: int) -> range:
        return range(self.first_eligible(preemptor_priority), len(self.units))

    def released_below(self, preemptor_priority: int) -> np.ndarray:
        """Per node, the capacity held by every eligible victim (N x R), cached per priority."""
        cached = self._released.get(preemptor_priority)
        if cached is None:
            snap = self.snapshot
            mask = (self.pod_unit >= 0) & (self.pod_unit_priority < preemptor_priority)
            idx = np.flatnonzero(mask)
            cached = np.zeros_like(snap.alloc)
            if len(idx):
                nodes = snap.pod_node[idx]
                for col in range(cached.shape[1]):
                    cached[:, col] = np.bincount(
                        nodes, weights=snap.pod_req[idx, col], minlength=len(snap.nodes)
                    ).astype(np.int64)
            self._released[preemptor_priority] = cached
        return cached

    def violations(self, preemptor_priority: int) -> np.ndarray:
        """PDB-violating pod count per unit, consuming budgets in importance order among the units
        eligible for this preemptor (``FilterVictimsWithPDBViolation``)."""
        cached = self._violations.get(preemptor_priority)
        if cached is None:
            cached = np.zeros(len(self.units), dtype=np.int64)
            if self.pod_pdbs:
                eligible = [self.units[i] for i in self.eligible(preemptor_priority)]
                for unit, count in zip(eligible, self.count_violations(eligible)):
                    cached[unit.index] = count
            self._violations[preemptor_priority] = cached
        return cached

    def count_violations(self, units_in_order: Sequence[Unit]) -> list[int]:
        """Violating pods per unit when these units are disrupted in this order."""
        snap = self.snapshot
        allowed = [pdb.allowed for pdb in snap.pdbs]
        out = []
        for unit in units_in_order:
            count = 0
            for pod_idx in unit.pdb_pods:
                for pdb_idx in self.pod_pdbs[pod_idx]:
                    allowed[pdb_idx] -= 1
                    if allowed[pdb_idx] < 0:
                        count += 1
                        break
            out.append(count)
        return out


def victim_cost(index: UnitIndex, unit_ids: Iterable[int]) -> Cost:
    """docs/design.md cost order: (PDB violations, highest priority, priority sum, units, pods, GPU-seconds)."""
    units = sorted((index.units[i] for i in unit_ids), key=lambda u: u.index)
    if not units:
        return NO_VICTIM_COST
    violations = sum(index.count_violations(units)) if index.pod_pdbs else 0
    return Cost(
        violations,
        max(u.priority for u in units),
        sum(u.priority for u in units),
        len(units),
        sum(len(u.pods) for u in units),
        round(sum(u.gpu_seconds for u in units), 3),
    )
