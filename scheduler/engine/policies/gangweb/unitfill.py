"""Unit-fill placement: free room by whole victim units, cheapest first, then place the gang there.

Per-node greedy costing is myopic about ``disruptionMode: all`` units: one 16-pod gang frees 16
nodes at once for a single victim, while per node it looks dearer than a lone pod. This candidate
generator looks at units instead of nodes: units in the domain are taken lowest priority first and,
within a priority, the ones that free the most pod slots first, until the gang has room; the gang is
then packed there (tightest fit, so that as many freed units as possible go unused) and reprieval
gives back whatever the placement did not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...placement import fit_columns, node_mask, place_least_allocated, tightest_fit_scores

if TYPE_CHECKING:
    from ...evaluation import Problem
    from ...preemptor import Domain


def _slots(free_rows: np.ndarray, request: np.ndarray, cols: np.ndarray) -> np.ndarray:
    slots: np.ndarray = np.maximum(np.min(free_rows[..., cols] // request[cols], axis=-1), 0)
    return slots


def unit_fill_placement(problem: Problem, domain: Domain) -> list[tuple[int, int]]:
    snap, index = problem.snapshot, problem.units
    pending = problem.gang.pending
    # Slots are counted for the largest request of the gang, so the count never overstates room.
    request = snap.pod_req[pending].max(axis=0)
    cols = fit_columns(request)
    rows = domain.nodes[node_mask(snap, snap.pods[pending[0]])[domain.nodes]]
    if not len(rows):
        return []
    usable = set(rows.tolist())
    slots = dict(zip(rows.tolist(), _slots(snap.free[rows], request, cols).tolist()))
    have, need = sum(slots.values()), len(pending)

    # Each unit's stand-alone gain in slots, for every eligible unit in the domain at once.
    entries = index.entries_on(rows)
    entries = entries[index.entry_unit[entries] >= problem.first_eligible]
    if problem.excluded:
        entries = entries[~np.isin(index.entry_unit[entries], list(problem.excluded))]
    if not len(entries):
        return []
    ent_node = index.entry_node[entries]
    before = _slots(snap.free[ent_node], request, cols)
    gains = _slots(snap.free[ent_node] + index.entry_req[entries], request, cols) - before
    ent_unit = index.entry_unit[entries]
    candidates, inverse = np.unique(ent_unit, return_inverse=True)
    unit_gain = np.bincount(inverse, weights=gains, minlength=len(candidates))
    # Lowest priority first; then units that free what the gang needs (more is no better), then
    # the smallest such units.
    useful = np.minimum(unit_gain, need)
    order = candidates[
        np.lexsort((-candidates, index.unit_pods[candidates], -useful, index.priorities[candidates]))
    ].tolist()

    free: dict[int, np.ndarray] = {}
    units = index.units
    position = 0
    while True:
        while have < need and position < len(order):
            unit = units[order[position]]
            position += 1
            for node, req in unit.node_req.items():
                if node in usable:
                    row = free.get(node)
                    row = free[node] = (snap.free[node] if row is None else row) + req
                    after = int(_slots(row, request, cols))
                    have += after - slots[node]
                    slots[node] = after
        local = snap.free[rows]
        if free:
            changed = np.flatnonzero(np.isin(rows, np.fromiter(free, dtype=np.int64)))
            local[changed] = np.array([free[int(rows[i])] for i in changed])
        assignments = place_least_allocated(
            snap, pending, local, rows, problem.port_book(removed_all=True), scorer=tightest_fit_scores
        )
        placed = [(p, n) for p, n in zip(pending, assignments) if n >= 0]
        if len(placed) == len(pending) or position >= len(order):
            return placed
        need = have + 1  # the shapes did not pack as counted: free one more slot and retry
