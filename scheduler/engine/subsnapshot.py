"""Cutting a snapshot down to what one fan-out shard's topology domains need (a sub-snapshot).

A shard plans ``plan(sub, group, domains=shard)`` and must reach the plan the whole snapshot gives
for the same domains. So a sub-snapshot keeps, besides the small kinds (PodGroups,
CompositePodGroups, Workloads, PDBs, PriorityClasses, all of them):

- the nodes of the shard's domains and of the *anchor* domains (see below), with every pod bound
  to them;
- every victim unit touching those nodes with ALL its pods, cluster-wide (out-of-domain pods count
  toward a unit's size, age and cost), and the nodes hosting them: the engine drops pods bound to
  nodes missing from the snapshot. Those extra nodes lose the topology label, so they never become
  (partial) candidate domains;
- the units sharing a PodDisruptionBudget with those units, transitively: budgets are consumed in
  importance order across every eligible unit, which decides reprieval order;
- the preemptor's own pods, pending and running.

Anchor domains are the ones whose outcome the policy decides over the whole cluster even within a
shard (``PreemptionPolicy.anchor_domains``); for gangweb: where the gang fits without preemption, or
else where kube-scheduler's evaluator (kep5710) would place it. Both walks take the first domain in
a fixed order, so keeping that one domain is enough for the shard to reach the same choice. The
snapshot's "now" (newest pod timestamp, which prices lost GPU-seconds) travels with the cut.

Only an infeasible shard's reason can read differently: its "no node is usable" check and node
counts see the cut's nodes. A shard that is feasible on the whole snapshot is feasible on its cut
(the pods it places pass the filters on the shard's own nodes), with the same plan.

The coordinator has parsed the whole snapshot already (to rank and deal the domains), so the cut
reads the parsed indices and copies only the raw dicts it keeps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .evaluation import Problem
from .placement import topology_domains
from .policies import DEFAULT_POLICY, policy_named
from .preemptor import Preemptor
from .snapshot import Snapshot, _flatten, parse_snapshot

# The DRA kinds travel whole too: devices of nodes outside the cut are dropped with their nodes, and a
# claim with a consumer outside the cut holds its devices there as on the whole snapshot (devices.py).
SMALL_KINDS = (
    "PodGroup",
    "CompositePodGroup",
    "Workload",
    "PodDisruptionBudget",
    "PriorityClass",
    "ResourceSlice",
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
)


def _object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class SnapshotCutter:
    """Indexes a parsed snapshot and its raw objects once; ``cut`` then builds each shard's objects."""

    def __init__(
        self, snapshot: Snapshot, objects: Iterable[Any], podgroup: str, policy: str = DEFAULT_POLICY
    ) -> None:
        self.snapshot = snapshot
        self.policy = policy_named(policy)
        self.gang = Preemptor(snapshot, podgroup)
        self.topology_key = self.gang.group.topology_key
        self.raw_nodes: dict[str, dict] = {}
        self.raw_pods: dict[str, dict] = {}
        self.small: list[dict] = []
        for obj in _flatten(objects):
            kind = obj.get("kind") if isinstance(obj, dict) else None
            if kind == "Node":
                self.raw_nodes[(obj.get("metadata") or {}).get("name")] = obj
            elif kind == "Pod":
                self.raw_pods[_object_key(obj)] = obj
            elif kind in SMALL_KINDS:
                self.small.append(obj)
        if self.topology_key:
            self.values, self.node_domain = topology_domains(snapshot, self.topology_key)
        else:
            self.values, self.node_domain = [], np.zeros(len(snapshot.nodes), dtype=np.int64)
        self.value_index = {v: i for i, v in enumerate(self.values)}
        self.anchors = self.policy.anchor_domains(Problem(snapshot, self.gang))
        self._pdb_units = self._units_by_budget()

    def _units_by_budget(self) -> dict[int, set[int]]:
        index = self.snapshot.units
        out: dict[int, set[int]] = {}
        for pod, budgets in index.pod_pdbs.items():
            for budget in budgets:
                out.setdefault(budget, set()).add(int(index.pod_unit[pod]))
        return out

    def _budget_closure(self, units: set[int]) -> set[int]:
        if not self._pdb_units:
            return units
        index = self.snapshot.units
        seen_budgets: set[int] = set()
        todo = list(units)
        while todo:
            unit = index.units[todo.pop()]
            for pod in unit.pdb_pods:
                for budget in index.pod_pdbs[pod]:
                    if budget in seen_budgets:
                        continue
                    seen_budgets.add(budget)
                    for other in self._pdb_units[budget] - units:
                        units.add(other)
                        todo.append(other)
        return units

    def cut(self, domains: Iterable[str | None]) -> dict[str, Any]:
        """``{"objects": [...], "now": float}`` for a shard planning these domain values."""
        snap, index = self.snapshot, self.snapshot.units
        wanted = [self.value_index[d] for d in set(domains) | set(self.anchors) if d in self.value_index]
        in_domain = np.isin(self.node_domain, wanted) if self.topology_key else np.ones(len(snap.nodes), bool)
        domain_nodes = np.flatnonzero(in_domain).tolist()
        pods: set[int] = set()
        units: set[int] = set()
        for node in domain_nodes:
            pods.update(snap.pods_by_node[node])
            units.update(index.node_units[node])
        if self._pdb_units and not any(index.units[u].pdb_pods for u in units):
            # Whether any pod has a budget decides how many reprieval orders gangweb tries.
            units.add(min(self._pdb_units[min(self._pdb_units)]))
        for unit in self._budget_closure(units):
            pods.update(index.units[unit].pods)
        keep_labelled = set(domain_nodes)
        for pod in snap.group_members.get(self.gang.key, []):
            pods.add(pod)
            if snap.pod_node[pod] >= 0:
                keep_labelled.add(int(snap.pod_node[pod]))
        extra = {int(snap.pod_node[p]) for p in pods if snap.pod_node[p] >= 0} - keep_labelled
        objects: list[dict] = [self.raw_nodes[snap.nodes[n].name] for n in sorted(keep_labelled)]
        objects += [self._unlabelled(self.raw_nodes[snap.nodes[n].name]) for n in sorted(extra)]
        objects += [self.raw_pods[snap.pods[p].key] for p in sorted(pods)]
        objects += self.small
        return {"objects": objects, "now": snap.now}

    def _unlabelled(self, node: dict) -> dict:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        if self.topology_key not in labels:
            return node
        kept = {k: v for k, v in labels.items() if k != self.topology_key}
        return {**node, "metadata": {**meta, "labels": kept}}


def parse_cut(cut: dict[str, Any]) -> Snapshot:
    """The sub-snapshot of a ``SnapshotCutter.cut``, priced at the whole snapshot's "now"."""
    snapshot = parse_snapshot(cut["objects"])
    now = float(cut["now"])
    if snapshot.now != now:
        from .victims import UnitIndex

        snapshot.now = now
        snapshot.units = UnitIndex(snapshot)  # lost GPU-seconds are priced at "now"
    return snapshot
