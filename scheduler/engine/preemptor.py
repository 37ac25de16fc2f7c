"""The preemptor: a PodGroup, its pending and running pods, priority, policy and domains."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler.words import plural

from .errors import PodGroupNotFound, SnapshotError
from .gangkey import GangKey, split_gang_key
from .placement import node_mask, topology_domains, unavailable_nodes
from .typed_objects import NEVER

if TYPE_CHECKING:
    from .dra.groupclaims import GroupClaims
    from .snapshot import Snapshot


class Domain:
    """Nodes a whole gang must fit into: the cluster, or one value of the topology label."""

    __slots__ = ("name", "nodes", "order")

    def __init__(self, name: str | None, nodes: np.ndarray, order: int) -> None:
        self.name, self.nodes, self.order = name, nodes, order


class Preemptor:
    """The gang being placed (kube-scheduler's preemptor): a PodGroup, its pending and running pods,
    priority, preemption policy, minCount and candidate domains. ``Problem.gang`` holds one."""

    def __init__(self, snapshot: Snapshot, gang_key: GangKey) -> None:
        try:
            namespace, name = split_gang_key(str(gang_key))
        except ValueError:
            raise SnapshotError(f"expected --podgroup NAMESPACE/NAME, got {gang_key!r}") from None
        group = snapshot.groups.get(str(gang_key))
        if group is None:
            raise PodGroupNotFound(f"PodGroup {namespace}/{name} not found in the snapshot")
        self.snapshot, self.group, self.key = snapshot, group, GangKey(group.key)
        self.priority = snapshot.effective_group_priority(group)
        self.preemption_policy = snapshot.preemption_policy(group)
        members = snapshot.group_members.get(group.key, [])
        pods = snapshot.pods
        self.running = [p for p in members if snapshot.pod_node[p] >= 0]
        pending = [p for p in members if pods[p].active and not pods[p].node_name]
        # Queue order: oldest first, then by name (kube-scheduler pops a group's pods in queue order).
        self.pending = sorted(pending, key=lambda p: (pods[p].created or 0.0, pods[p].name))
        self.is_gang = group.policy == "gang"
        self.min_count = group.min_count if self.is_gang else 1
        self._static_mask: np.ndarray | None = None

    @property
    def never_preempts(self) -> bool:
        return self.preemption_policy == NEVER

    def needed(self) -> int:
        """Pods that must be placed now for the group to count as scheduled."""
        if not self.is_gang:
            return 1
        return max(0, self.min_count - len(self.running))

    def succeeds(self, placed: int) -> bool:
        return placed >= max(self.needed(), 1) if self.pending else len(self.running) >= self.min_count

    def priority_mismatch(self) -> str | None:
        for p in self.pending + self.running:
            own = self.snapshot.pods[p].priority
            if own is not None and own != self.priority:
                return (
                    "all pods in a single pod group should match the priority of the pod group, "
                    f"got: {self.priority} and {own}"
                )
        return None

    def pod_affinity_users(self) -> list[str]:
        return [self.snapshot.pods[p].key for p in self.pending if self.snapshot.pods[p].uses_pod_affinity]

    def device_problems(self) -> GroupClaims | None:
        """The gang's DRA questions: a ``groupclaims.GroupClaims`` (PodGroup-level claims: blocked, or the
        units to evict for them) whose ``notes`` say what was not modelled; None without DRA objects."""
        index = self.snapshot.devices
        if index is None:
            return None
        from .dra.devices import notes_for
        from .dra.groupclaims import GroupClaims, group_claim_needs

        notes = notes_for(index, [self.snapshot.pods[p].key for p in self.pending])
        found = GroupClaims()
        shared = any(
            r is not None and index.pending_matcher(r).shared
            for p in self.pending
            for r in index.pending_needs.get(p, ())
        )
        if self.pending and (self.group.claim_refs or shared):
            found = group_claim_needs(index, self.group, self.priority, self.pending)
        found.notes = notes + [n for n in found.notes if n not in notes]
        return found

    def no_node_reason(self) -> str | None:
        """Why the group cannot succeed on any node whatever is evicted, when so few pending pods
        pass the static filters (Ready, cordon, taints, selector/affinity) anywhere."""
        snap = self.snapshot
        shut_out = [p for p in self.pending if not node_mask(snap, snap.pods[p]).any()]
        usable = len(self.pending) - len(shut_out)
        if not shut_out or usable >= max(self.needed(), 1):
            return None
        need = f"minCount {self.min_count}" if self.is_gang else "at least one pod"
        return (
            f"no node is usable for {len(shut_out)} of {plural(len(self.pending), 'pending pod')}, so the group "
            f"cannot reach {need} whatever is evicted: {unavailable_nodes(snap, snap.pods[shut_out[0]])}"
        )

    def static_mask(self) -> np.ndarray:
        """Nodes that at least one pending pod may use (union) - for cheap domain bounds."""
        if self._static_mask is None:
            snap = self.snapshot
            mask = np.zeros(len(snap.nodes), dtype=bool)
            for signature_pod in {snap.pods[p].placement_signature(): p for p in self.pending}.values():
                mask |= node_mask(snap, snap.pods[signature_pod])
            self._static_mask = mask
        return self._static_mask

    def domains(self) -> tuple[list[Domain], str | None]:
        """Candidate domains, or ([], reason) when the topology constraint cannot be met; cut to the topology
        values the running groups of its CompositePodGroups already sit in (``composite_nodes``)."""
        found, why_not = self._own_domains()
        if why_not or not self.group.parent:
            return found, why_not
        allowed, why_not = self.composite_nodes()
        if why_not:
            return [], why_not
        if allowed is None:
            return found, None
        cut = [Domain(d.name, d.nodes[allowed[d.nodes]], d.order) for d in found]
        cut = [d for d in cut if len(d.nodes)]
        if not cut:
            return (
                [],
                "no node lies in the topology values its CompositePodGroups' running groups already hold",
            )
        return cut, None

    def composite_nodes(self) -> tuple[np.ndarray | None, str | None]:
        """KEP-5732 through CompositePodGroups: a composite with ``schedulingConstraints.topology`` keeps its
        whole tree in one value of that label, so once some group under it runs, the value is fixed for this
        one too. The nodes allowed (None: no composite fixes any), or a reason none can be."""
        snap = self.snapshot
        allowed: np.ndarray | None = None
        for ancestor in snap.ancestors(self.group)[1:]:
            key = ancestor.topology_key
            if key is None:
                continue
            under = [g for g in snap.groups.values() if g.key != self.key and ancestor in snap.ancestors(g)]
            running = [p for g in under for p in snap.group_members.get(g.key, []) if snap.pod_node[p] >= 0]
            if not running:
                continue
            _, node_domain = topology_domains(snap, key)
            held = {int(node_domain[snap.pod_node[p]]) for p in running}
            name = f"{ancestor.kind} {ancestor.name}"
            if -1 in held:
                return None, f"running groups of {name} sit on nodes without its topology label {key!r}"
            if len(held) > 1:
                return None, f"running groups of {name} already span several {key!r} values"
            mask = node_domain == held.pop()
            allowed = mask if allowed is None else allowed & mask
        return allowed, None

    def _own_domains(self) -> tuple[list[Domain], str | None]:
        snap = self.snapshot
        key = self.group.topology_key
        if key is None:
            return [Domain(None, np.arange(len(snap.nodes)), 0)], None
        values, node_domain = topology_domains(snap, key)
        if self.running:
            held = {int(node_domain[snap.pod_node[p]]) for p in self.running}
            if -1 in held:
                return [], f"running pods of the group sit on nodes without the topology label {key!r}"
            if len(held) > 1:
                return [], f"running pods of the group already span several {key!r} values"
            only = held.pop()
            return [Domain(values[only], np.flatnonzero(node_domain == only), only)], None
        if not values:
            return [], f"no node carries the topology label {key!r}"
        members = domain_members(node_domain, len(values))
        return [Domain(v, members[i], i) for i, v in enumerate(values)], None


def domain_members(node_domain: np.ndarray, count: int) -> list[np.ndarray]:
    """Node indices per domain value, in one pass."""
    order = np.argsort(node_domain, kind="stable")
    sorted_domains = node_domain[order]
    bounds = np.searchsorted(sorted_domains, np.arange(count + 1))
    return [order[bounds[i] : bounds[i + 1]] for i in range(count)]
