"""Victim units (KEP-5710 section 3.3): what gets preempted together, how important it is, and PDBs.

A unit is the highest ``disruptionMode: all`` ancestor of a pod's group (all its scheduled pods,
cluster-wide), or the pod alone. Units are built once per snapshot and kept in
``MoreImportantVictim`` order, most important first, so that "every victim below priority P" is a
suffix of that list and never needs sorting again.
"""

from __future__ import annotations

import copy
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .backref import SnapshotRef
from .checkpoints import assumed_checkpoint
from .contract import NO_VICTIM_COST, NO_VICTIM_PRIORITY, Cost
from .typed_objects import ALL

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .snapshot import Snapshot
    from .typed_objects import Group, Pod

RANK = {"Pod": 1, "PodGroup": 2, "CompositePodGroup": 3}
__all__ = ["NO_VICTIM_PRIORITY", "RANK", "Unit", "UnitIndex", "top_all_ancestor", "unit_key", "victim_cost"]


class Unit:
    """One victim: preempted (or reprieved) as a whole."""

    __slots__ = (
        "_node_req",
        "_node_req_t",
        "_rows",
        "earliest_start",
        "gpus",
        "index",
        "kind",
        "name",
        "namespace",
        "pdb_pods",
        "pods",
        "priority",
        "tiebreak",
        "type_rank",
    )
    # Set by ``UnitIndex._sums`` once all units are built: their per-unit sums in one numpy pass.
    gpus: int
    earliest_start: float | None
    tiebreak: str

    def __init__(
        self, kind: str, namespace: str, name: str, type_rank: int, priority: int, pods: list[int]
    ) -> None:
        self.kind, self.namespace, self.name = kind, namespace, name
        self.type_rank, self.priority, self.pods = type_rank, priority, pods
        self.index = -1
        self.pdb_pods: list[int] = []
        self._node_req: dict[int, np.ndarray] | None = {}
        self._node_req_t: dict[int, tuple[int, ...]] | None = {}

    def _occupies(self, nodes: list[int], req: np.ndarray, first: int, end: int) -> None:
        """Its (node, request) rows are ``nodes[first:end]``, ``req[first:end]`` of the index's layout."""
        self._rows = (nodes, req, first, end)
        self._node_req = self._node_req_t = None

    @property
    def node_req(self) -> dict[int, np.ndarray]:
        """Per node it holds, what its pods there request, in the order its pods first reach the node. Made
        on first use: a plan reads a few units' rows, and making all of them took a sixth of an index build
        (docs/measurements.md)."""
        if self._node_req is None:
            nodes, req, first, end = self._rows
            self._node_req = dict(zip(nodes[first:end], req[first:end]))
        return self._node_req

    @property
    def node_req_t(self) -> dict[int, tuple[int, ...]]:
        """``node_req`` in plain tuples: per-node arithmetic on a handful of numbers is faster without numpy."""
        if self._node_req_t is None:
            nodes, req, first, end = self._rows
            self._node_req_t = dict(zip(nodes[first:end], map(tuple, req[first:end].tolist())))
        return self._node_req_t

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def importance_key(self) -> tuple[int, int, int, float, str]:
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
    snapshot = SnapshotRef()  # weak: no reference cycle with the snapshot that holds this index

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        pods = snapshot.pods
        by_ancestor: dict[tuple[str, str], list[int]] = {}
        singles: list[Unit] = []
        tops: dict[str, Group | None] = {}  # gang key -> its top "all" ancestor, shared by its pods
        protected = snapshot.protected
        for pod_idx in snapshot.bound.tolist():
            if pod_idx in protected:
                continue
            pod = pods[pod_idx]
            top_all = None
            gang_key = pod.gang_key
            if gang_key is not None:
                if gang_key in tops:
                    top_all = tops[gang_key]
                else:
                    top_all = tops[gang_key] = top_all_ancestor(snapshot, pod)
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
        """Per-unit sums and the (unit, node) rows in numpy over one flat layout (units in build order,
        each one's pods ascending) instead of per-unit Python loops: ``UnitIndex`` at 20,000 nodes /
        40,000 pods, collector paused, 0.78 s -> 0.50 s (median of 7, load 3; /work/notes/index.md)."""
        snap = self.snapshot
        n_pods, n_nodes, n_units = len(snap.pods), len(snap.nodes), len(units)
        pod_pdbs = self._pod_pdbs()
        for unit in units:
            unit.pods.sort()
        sizes = np.fromiter((len(u.pods) for u in units), dtype=np.int64, count=n_units)
        flat = np.fromiter((p for u in units for p in u.pods), dtype=np.int64, count=int(sizes.sum()))
        owner = np.repeat(np.arange(n_units, dtype=np.int64), sizes)  # build-order unit of each row
        pod_node = snap.pod_node[flat]
        # (unit, node) entries, each unit's in the order its pods first reach the node (node_req's order).
        pairs, first, inverse = np.unique(owner * n_nodes + pod_node, return_index=True, return_inverse=True)
        entry_req = np.zeros((len(pairs), len(snap.resources)), dtype=np.int64)
        np.add.at(entry_req, inverse.reshape(-1), snap.pod_req[flat])
        appearance = np.argsort(first, kind="stable")
        e_owner, e_node, e_req = (
            pairs[appearance] // max(n_nodes, 1),
            pairs[appearance] % max(n_nodes, 1),
            entry_req[appearance],
        )
        self.pod_lost = np.zeros(n_pods, dtype=np.float64)  # per pod: GPU-seconds an eviction now loses
        self._flat = flat  # the units' pods in build order: the rows their GPU-seconds are summed in
        self.gpu_seconds: list[float] = []  # per unit, what its eviction loses now (``_summed``)
        # Per pod its start, the time it would lose work since and its GPUs (``with_unbound``'s new ``now``;
        # only the rows of pods with a node name are read, which ``with_unbound`` never changes).
        self._lost_since: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]] | None = None
        if n_units:
            self._sums(units, flat, owner, sizes, e_owner, e_node, e_req)
        pod_owner = np.full(n_pods, -1, dtype=np.int64)
        pod_owner[flat] = owner
        for p in sorted(pod_pdbs):  # ascending, as each unit's pods are
            units[pod_owner[p]].pdb_pods.append(p)
        for i, unit in enumerate(units):
            unit.index = i
        units.sort(key=Unit.importance_key)
        final = np.empty(n_units, dtype=np.int64)  # build-order index -> importance-order index
        final[[u.index for u in units]] = np.arange(n_units)
        for i, unit in enumerate(units):
            unit.index = i
        self.units = units
        self.pod_pdbs = pod_pdbs
        self.priorities = np.array([u.priority for u in units], dtype=np.int64)
        self.unit_pods = np.array([len(u.pods) for u in units], dtype=np.int64)
        self._neg_priorities = [-u.priority for u in units]
        self.pod_unit = np.full(n_pods, -1, dtype=np.int64)
        self.pod_unit[flat] = final[owner]
        self.gpu_seconds = self._summed(self.pod_lost)
        self.pod_unit_priority = np.zeros(n_pods, dtype=np.int64)
        held = np.flatnonzero(self.pod_unit >= 0)
        self.pod_unit_priority[held] = self.priorities[self.pod_unit[held]]
        # One row per (unit, node) it occupies, sorted by node then unit: whole-domain questions in numpy.
        e_unit = final[e_owner]
        by_node = np.lexsort((e_unit, e_node))
        self.entry_unit, self.entry_node, self.entry_req = e_unit[by_node], e_node[by_node], e_req[by_node]
        # Node n owns entries[entry_start[n]:entry_start[n + 1]].
        self.entry_start = np.searchsorted(self.entry_node, np.arange(n_nodes + 1))
        held_by, starts = self.entry_unit.tolist(), self.entry_start.tolist()
        self.node_units: list[list[int]] = [held_by[starts[n] : starts[n + 1]] for n in range(n_nodes)]
        self._released: dict[int, np.ndarray] = {}
        self._violations: dict[int, np.ndarray] = {}

    def _sums(
        self,
        units: list[Unit],
        flat: NDArray[np.int64],
        owner: NDArray[np.int64],
        sizes: NDArray[np.int64],
        e_owner: NDArray[np.int64],
        e_node: NDArray[np.int64],
        e_req: NDArray[np.int64],
    ) -> None:
        snap = self.snapshot
        firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        gpu_per_pod = np.asarray(snap.gpus(snap.pod_req), dtype=np.int64)
        gpus = np.add.reduceat(gpu_per_pod[flat], firsts)
        started = np.array(
            [np.inf if p.start_time is None else p.start_time for p in snap.pods], dtype=np.float64
        )
        # GPU-seconds a pod would lose if evicted now: since its start or its last checkpoint
        # (checkpoints.lost_gpu_seconds); pods without a start time lose nothing.
        since = np.maximum(started, self._checkpoints(flat))
        lost = np.where(np.isfinite(started), gpu_per_pod * np.maximum(snap.now - since, 0.0), 0.0)
        self.pod_lost = lost
        self._lost_since = (started, since, gpu_per_pod)
        earliest = np.minimum.reduceat(started[flat], firsts)
        uids = [pod.uid for pod in snap.pods]
        by_uid = sorted(range(len(uids)), key=uids.__getitem__)
        uid_rank = np.empty(len(uids), dtype=np.int64)
        uid_rank[by_uid] = np.arange(len(uids))
        tiebreak = np.minimum.reduceat(uid_rank[flat], firsts)
        nodes = e_node.tolist()
        e_bounds = np.searchsorted(e_owner, np.arange(len(units) + 1)).tolist()
        for u, (unit, g, e, t) in enumerate(zip(units, gpus.tolist(), earliest.tolist(), tiebreak.tolist())):
            unit.gpus, unit.tiebreak = g, uids[by_uid[t]]
            unit.earliest_start = e if e != np.inf else None
            unit._occupies(nodes, e_req, e_bounds[u], e_bounds[u + 1])

    def with_unbound(self, snapshot: Snapshot) -> UnitIndex:
        """This index for ``snapshot``, its own snapshot with only pods without a node name changed
        (``Snapshot.with_unbound``): units hold only pods on nodes, so they stay, and only the per-pod arrays'
        tails and the lost work at the new ``now`` are made again, in the very order a fresh index sums it."""
        first, tail = snapshot.first_unbound, len(snapshot.pods) - snapshot.first_unbound
        clone = copy.copy(self)
        clone.snapshot = snapshot
        clone.pod_unit = np.concatenate((self.pod_unit[:first], np.full(tail, -1, dtype=np.int64)))
        clone.pod_unit_priority = np.concatenate(
            (self.pod_unit_priority[:first], np.zeros(tail, dtype=np.int64))
        )
        clone._released, clone._violations = {}, {}
        lost = self.pod_lost[:first]
        if self._lost_since is not None and snapshot.now != self.snapshot.now:
            started, since, gpu_per_pod = (a[:first] for a in self._lost_since)
            lost = np.where(np.isfinite(started), gpu_per_pod * np.maximum(snapshot.now - since, 0.0), 0.0)
            clone.gpu_seconds = self._summed(lost)
        clone.pod_lost = np.concatenate((lost, np.zeros(tail, dtype=np.float64)))
        return clone

    def _summed(self, pod_lost: NDArray[np.float64]) -> list[float]:
        """Per unit (importance order) the GPU-seconds its eviction loses: its pods' ``pod_lost`` added in
        build order (bincount adds in row order, as a per-unit sum in pod order does: the very same floats)."""
        flat = self._flat
        summed: list[float] = np.bincount(
            self.pod_unit[flat], weights=pod_lost[flat], minlength=len(self.units)
        ).tolist()
        return summed

    def _checkpoints(self, flat: NDArray[np.int64]) -> NDArray[np.float64]:
        """Per pod, its last checkpoint (-inf: none): the newest its pod and the groups above it report,
        else the one its namespace's assumed interval gives (``checkpoints.assumed_checkpoint``)."""
        snap = self.snapshot
        out = np.full(len(snap.pods), -np.inf, dtype=np.float64)
        intervals = snap.intervals
        reported = any(p.checkpoint is not None for p in snap.pods) or any(
            g.checkpoint is not None for groups in (snap.groups, snap.composites) for g in groups.values()
        )
        if not reported and not intervals:
            return out  # the usual cluster: nobody reports, nothing assumed
        by_group: dict[str, float | None] = {}
        for p in flat.tolist():
            pod = snap.pods[p]
            newest = pod.checkpoint
            group = snap.group_of(pod)
            if group is not None:
                if group.key not in by_group:
                    times = [g.checkpoint for g in snap.ancestors(group) if g.checkpoint is not None]
                    by_group[group.key] = max(times) if times else None
                from_group = by_group[group.key]
                if from_group is not None and (newest is None or from_group > newest):
                    newest = from_group
            if newest is None and intervals:
                newest = assumed_checkpoint(pod.start_time, intervals.of(pod.namespace), snap.now)
            if newest is not None:
                out[p] = newest
        return out

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
            if pod_idx in snap.protected:
                continue
            pod = snap.pods[pod_idx]
            possible = list(unkeyed.get(pod.namespace, ()))
            for label in pod.labels.items():
                possible += keyed.get((pod.namespace, *label), ())
            if not possible:
                continue
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
        round(sum(index.gpu_seconds[u.index] for u in units), 3),
    )
