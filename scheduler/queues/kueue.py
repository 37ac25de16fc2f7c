"""Kueue ``kueue.x-k8s.io/v1beta2``: ClusterQueues in a Cohort tree, LocalQueues, ResourceFlavors and the
admission state of Workloads, with Kueue's own arithmetic (pkg/cache/scheduler ``resource_node.go``,
``fair_sharing.go``).

Per (flavor, resource): a ClusterQueue's subtree quota is its nominal quota; a Cohort's is its own
nominal quota plus what each child offers (its subtree quota less the part its lending limit keeps
local). A Cohort's usage is its children's usage beyond their local quota. Borrowed is usage beyond the
subtree quota. The dominant resource share (``weightedShare``) of a node in a cohort is, over resource
names, the largest borrowed amount (summed over flavors) per 1000 of what the parent could lend it,
divided by the fair-sharing weight and rounded up; a zero weight that borrows is the largest int64.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from scheduler.engine.resources import parse_quantity

from .cluster import QueueMember, QueueReading, add, created_at
from .lending import share_out
from .model import RESOURCES, Amount, Pending, Queue, QueueModel, gangweb_share

GROUP = "kueue.x-k8s.io"
MAX_INT64 = 2**63 - 1
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
FlavorResource = tuple[str, str]


@dataclass
class Quota:
    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass
class Node:
    """A ClusterQueue or a Cohort, as Kueue's resource node."""

    name: str
    kind: str  # "ClusterQueue" or "Cohort"
    parent: Node | None = None
    weight: float = 1.0
    quotas: dict[FlavorResource, Quota] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)  # counts against subtree (Kueue's Usage)
    total_usage: dict[FlavorResource, int] = field(default_factory=dict)  # every workload beneath

    def local_quota(self, fr: FlavorResource) -> int:
        limit = self.quotas[fr].lending_limit if fr in self.quotas else None
        return max(0, self.subtree.get(fr, 0) - limit) if limit is not None else 0

    def borrowed(self, fr: FlavorResource) -> int:
        return max(0, self.usage.get(fr, 0) - self.subtree.get(fr, 0)) if self.parent is not None else 0


def accumulate(node: Node) -> None:
    """Kueue's ``updateCohortResourceNode``: subtree quota and usage from the leaves up."""
    if node.kind == "ClusterQueue":
        node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        node.total_usage = dict(node.usage)
        return
    node.subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    node.usage, node.total_usage = {}, {}
    for child in node.children:
        accumulate(child)
        for fr, quota in child.subtree.items():
            node.subtree[fr] = node.subtree.get(fr, 0) + quota - child.local_quota(fr)
        for fr, used in child.usage.items():
            node.usage[fr] = node.usage.get(fr, 0) + max(0, used - child.local_quota(fr))
        add(node.total_usage, child.total_usage)  # type: ignore[arg-type]


def potential_available(node: Node, fr: FlavorResource) -> int:
    """Kueue's ``potentialAvailable``: the most this node could get with no usage, within borrowing limits."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    available = node.local_quota(fr) + potential_available(node.parent, fr)
    limit = node.quotas[fr].borrowing_limit if fr in node.quotas else None
    if limit is not None:
        available = min(node.subtree.get(fr, 0) + limit, available)
    return available


def available(node: Node, fr: FlavorResource) -> int:
    """Kueue's ``available``: what remains for this node now, within borrowing limits (may be negative)."""
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(node.parent, fr)
    limit = node.quotas[fr].borrowing_limit if fr in node.quotas else None
    if limit is not None:
        stored = node.subtree.get(fr, 0) - node.local_quota(fr)
        used = max(0, node.usage.get(fr, 0) - node.local_quota(fr))
        parent_available = min(stored - used + limit, parent_available)
    return max(0, node.local_quota(fr) - node.usage.get(fr, 0)) + parent_available


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


@dataclass(frozen=True)
class DominantShare:
    weighted_share: int
    dominant_resource: str | None
    borrowing: bool


def dominant_resource_share(node: Node, request: Mapping[FlavorResource, int] | None = None) -> DominantShare:
    """Kueue's ``dominantResourceShare`` and ``roundedWeightedShare`` (``request``: a workload's, added)."""
    if node.parent is None:
        return DominantShare(0, None, False)
    request = request or {}
    borrowing: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        amount = request.get(fr, 0) + node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + amount
    if not borrowing:
        return DominantShare(0, None, False)
    lendable: dict[str, int] = {}
    for fr in _root(node).subtree:
        lendable[fr[1]] = min(MAX_INT64, lendable.get(fr[1], 0) + potential_available(node.parent, fr))
    ratio, dominant = 0.0, None
    for name, amount in borrowing.items():
        lend = lendable.get(name, 0)
        if lend > 0:
            value = float(amount) * 1000.0 / float(lend)
            if value > ratio or (value == ratio and dominant is not None and name < dominant):
                ratio, dominant = value, name
    if node.weight == 0:
        return DominantShare(MAX_INT64, dominant, True)
    return DominantShare(0 if ratio == 0 else math.ceil(ratio / node.weight), dominant, True)


def parse_weight(fair_sharing: Any) -> float:
    """``fairSharing.weight`` (a Quantity) as a float; 1 when unset."""
    if not isinstance(fair_sharing, Mapping) or fair_sharing.get("weight") is None:
        return 1.0
    value = str(fair_sharing["weight"])
    try:
        return float(Decimal(parse_quantity(value, milli=True)) / 1000)
    except (ValueError, InvalidOperation):
        raise ValueError(f"spec.fairSharing.weight: invalid quantity {value!r}") from None


def quota_amount(reading: QueueReading, resource: str, value: Any, where: str) -> int:
    try:
        return reading.amount(resource, value)
    except ValueError as exc:
        if "too large" in str(exc):
            return MAX_INT64  # Kueue's Unlimited: a quantity beyond int64 in its unit
        raise ValueError(f"{where}: {exc}") from None


def parse_quotas(reading: QueueReading, spec: Mapping[str, Any], where: str) -> dict[FlavorResource, Quota]:
    quotas: dict[FlavorResource, Quota] = {}
    groups = spec.get("resourceGroups") or []
    if not isinstance(groups, list):
        raise ValueError(f"{where}.resourceGroups: expected a list")
    for g, group in enumerate(groups):
        for f, flavor in enumerate((group or {}).get("flavors") or []):
            for r, res in enumerate((flavor or {}).get("resources") or []):
                at = f"{where}.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                name = str(res.get("name"))
                quota = Quota(quota_amount(reading, name, res.get("nominalQuota", 0), f"{at}.nominalQuota"))
                if res.get("borrowingLimit") is not None:
                    quota.borrowing_limit = quota_amount(
                        reading, name, res["borrowingLimit"], f"{at}.borrowingLimit"
                    )
                if res.get("lendingLimit") is not None:
                    quota.lending_limit = quota_amount(
                        reading, name, res["lendingLimit"], f"{at}.lendingLimit"
                    )
                quotas[(str(flavor.get("name")), name)] = quota
    return quotas


def _condition(obj: Mapping[str, Any], kind: str) -> bool:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition.get("status") == "True"
    return False


def workload_usage(reading: QueueReading, workload: Mapping[str, Any]) -> dict[FlavorResource, int]:
    """What an admitted Workload holds, per (flavor, resource): its podSetAssignments' resourceUsage."""
    usage: dict[FlavorResource, int] = {}
    admission = (workload.get("status") or {}).get("admission") or {}
    for a, assignment in enumerate(admission.get("podSetAssignments") or []):
        flavors = assignment.get("flavors") or {}
        for name, quantity in (assignment.get("resourceUsage") or {}).items():
            at = f"status.admission.podSetAssignments[{a}].resourceUsage.{name}"
            fr = (str(flavors.get(name, "")), str(name))
            usage[fr] = usage.get(fr, 0) + quota_amount(reading, name, quantity, at)
    return usage


def workload_request(reading: QueueReading, workload: Mapping[str, Any]) -> dict[str, Amount]:
    """What a waiting Workload asks for, per model resource: its pod sets' requests times their counts."""
    from scheduler.engine.resources import pod_requests

    out: dict[str, Amount] = {}
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        template = (pod_set.get("template") or {}).get("spec") or {}
        count = int(pod_set.get("count") or 1)
        for name, value in pod_requests(template).items():
            key = reading.resource_key(name)
            if key is not None:
                out[key] = out.get(key, 0) + value * count
    return out


def is_admitted(workload: Mapping[str, Any]) -> bool:
    return _condition(workload, "QuotaReserved") and not _condition(workload, "Finished")


def is_waiting(workload: Mapping[str, Any]) -> bool:
    spec = workload.get("spec") or {}
    return (
        not is_admitted(workload)
        and not _condition(workload, "Finished")
        and spec.get("active", True) is not False
    )


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def members(workload: Mapping[str, Any], pods_by_owner: Mapping, pods_by_group: Mapping) -> list[QueueMember]:
    """A Workload's pods: those of its pod group label, and those its owner controls."""
    meta = workload.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    found = list(pods_by_group.get((namespace, name), ()))
    for owner in meta.get("ownerReferences") or []:
        found += pods_by_owner.get((namespace, owner.get("kind"), owner.get("name")), ())
    return found


def gang_of(workload: Mapping[str, Any], pods_by_owner: Mapping, pods_by_group: Mapping) -> str:
    """The gang a Workload stands for: the PodGroup its pods name, else the Workload itself."""
    for pod in members(workload, pods_by_owner, pods_by_group):
        if pod.group:
            return pod.group
    meta = workload.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _pod_indexes(pods: Iterable[QueueMember]) -> tuple[dict, dict]:
    by_owner: dict[tuple, list[QueueMember]] = {}
    by_group: dict[tuple, list[QueueMember]] = {}
    for pod in pods:
        for owner in pod.owners:
            if owner.get("controller"):
                by_owner.setdefault((pod.namespace, owner.get("kind"), owner.get("name")), []).append(pod)
        if POD_GROUP_LABEL in pod.labels:
            by_group.setdefault((pod.namespace, pod.labels[POD_GROUP_LABEL]), []).append(pod)
    return by_owner, by_group


def read(reading: QueueReading, model: QueueModel) -> None:
    cluster_queues = reading.objects(GROUP, "ClusterQueue")
    if not cluster_queues:
        return
    nodes: dict[tuple[str, str], Node] = {}
    for obj in reading.objects(GROUP, "Cohort"):
        name = str((obj.get("metadata") or {}).get("name"))
        spec = obj.get("spec") or {}
        nodes[("Cohort", name)] = Node(
            name,
            "Cohort",
            weight=parse_weight(spec.get("fairSharing")),
            quotas=parse_quotas(reading, spec, f"Cohort {name}: spec"),
        )
    parents: dict[tuple[str, str], str | None] = {}
    for obj in reading.objects(GROUP, "Cohort"):
        name = str((obj.get("metadata") or {}).get("name"))
        parents[("Cohort", name)] = (obj.get("spec") or {}).get("parentName") or None
    for obj in cluster_queues:
        name = str((obj.get("metadata") or {}).get("name"))
        spec = obj.get("spec") or {}
        where = f"ClusterQueue {name}: spec"
        nodes[("ClusterQueue", name)] = Node(
            name,
            "ClusterQueue",
            weight=parse_weight(spec.get("fairSharing")),
            quotas=parse_quotas(reading, spec, where),
        )
        parents[("ClusterQueue", name)] = spec.get("cohortName") or None
    for parent_name in list(parents.values()):
        if parent_name and ("Cohort", parent_name) not in nodes:  # a cohort named only by its members
            nodes[("Cohort", parent_name)] = Node(parent_name, "Cohort")
            parents[("Cohort", parent_name)] = None
    for key, parent_name in parents.items():
        if parent_name:
            nodes[key].parent = nodes[("Cohort", parent_name)]
    for node in nodes.values():  # a cycle: Kueue leaves such a tree alone, so does this
        seen, current = {id(node)}, node.parent
        while current is not None:
            if id(current) in seen:
                model.warnings.append(f"Kueue Cohort {current.name}: its parents form a cycle")
                node.parent = None
                break
            seen.add(id(current))
            current = current.parent
    for node in nodes.values():
        if node.parent is not None:
            node.parent.children.append(node)

    local_queues: dict[tuple[str, str], str] = {}
    for obj in reading.objects(GROUP, "LocalQueue"):
        meta = obj.get("metadata") or {}
        local_queues[(str(meta.get("namespace")), str(meta.get("name")))] = str(
            (obj.get("spec") or {}).get("clusterQueue")
        )
    by_owner, by_group = _pod_indexes(reading.pods)
    waiting: dict[str, list[tuple[tuple, Mapping[str, Any]]]] = {}
    namespaces: dict[str, set[str]] = {}
    lq_usage: dict[tuple[str, str], dict[str, Amount]] = {}
    lq_waiting: dict[tuple[str, str], list] = {}
    for workload in reading.objects(GROUP, "Workload"):
        meta = workload.get("metadata") or {}
        namespace = str(meta.get("namespace"))
        queue_name = str((workload.get("spec") or {}).get("queueName") or "")
        if is_admitted(workload):
            cq = str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")
            node = nodes.get(("ClusterQueue", cq))
            if node is None:
                continue
            usage = workload_usage(reading, workload)
            add(node.usage, usage)  # type: ignore[arg-type]
            model.gangs[gang_of(workload, by_owner, by_group)] = ("kueue", cq)
            namespaces.setdefault(cq, set()).add(namespace)
            for pod in members(workload, by_owner, by_group):
                model.place(pod, "kueue", cq)
            into = lq_usage.setdefault((namespace, queue_name), {})
            for (_, res), value in usage.items():
                key = reading.resource_key(res)
                if key is not None:
                    into[key] = into.get(key, 0) + value
        elif is_waiting(workload):
            cq = local_queues.get((namespace, queue_name))
            if cq is None:
                continue
            priority = int((workload.get("spec") or {}).get("priority") or 0)
            order = (-priority, created_at(workload), _key(workload))
            waiting.setdefault(cq, []).append((order, workload))
            model.gangs[gang_of(workload, by_owner, by_group)] = ("kueue", cq)
            lq_waiting.setdefault((namespace, queue_name), []).append(workload)
            for pod in members(workload, by_owner, by_group):
                model.place(pod, "kueue", cq)
            namespaces.setdefault(cq, set()).add(namespace)
    for node in nodes.values():
        if node.parent is None:
            accumulate(node)

    positions: dict[str, int] = {}
    pending_of: dict[str, list[Pending]] = {}
    for cq, items in waiting.items():
        for position, (_, workload) in enumerate(sorted(items, key=lambda item: item[0]), start=1):
            positions[_key(workload)] = position
            pending_of.setdefault(cq, []).append(
                Pending(
                    gang_of(workload, by_owner, by_group),
                    position,
                    str((workload.get("metadata") or {}).get("namespace")),
                    workload_request(reading, workload),
                    _key(workload),
                )
            )

    queues: dict[tuple[str, str], Queue] = {}
    for (kind, name), node in sorted(nodes.items(), key=lambda item: (item[0][0] != "Cohort", item[0][1])):
        queue = Queue("kueue", kind, name, node.parent.name if node.parent else None, node.weight)
        for fr, quota in node.quotas.items():
            key = reading.resource_key(fr[1])
            if key is None:
                continue
            f = queue.figures(key)
            f.guaranteed += quota.nominal if kind == "ClusterQueue" else 0
        for fr, quota in node.subtree.items():
            key = reading.resource_key(fr[1])
            if key is None:
                continue
            f = queue.figures(key)
            if kind == "Cohort":
                f.guaranteed += quota
            f.borrowed += node.borrowed(fr)
        for fr, used in node.total_usage.items():
            key = reading.resource_key(fr[1])
            if key is not None:
                queue.figures(key).used += used
        if kind == "ClusterQueue":
            for key in queue.resources:
                frs = [fr for fr in node.quotas if reading.resource_key(fr[1]) == key]
                if node.parent is None:
                    queue.resources[key].limit = sum(node.quotas[fr].nominal for fr in frs)
                elif all(node.quotas[fr].borrowing_limit is not None for fr in frs):
                    queue.resources[key].limit = sum(
                        node.quotas[fr].nominal + (node.quotas[fr].borrowing_limit or 0) for fr in frs
                    )
        if kind == "ClusterQueue":
            for fr in node.quotas:
                key = reading.resource_key(fr[1])
                if key is not None:
                    queue.headroom[key] = queue.headroom.get(key, 0) + max(0, available(node, fr))
        drs = dominant_resource_share(node)
        queue.share = {
            "weightedShare": drs.weighted_share,
            "dominantResource": drs.dominant_resource,
            "borrowing": drs.borrowing,
        }
        queue.pending = pending_of.get(name, []) if kind == "ClusterQueue" else []
        if kind == "ClusterQueue":  # the namespaces that run or wait in it, and those of its LocalQueues
            queue.namespaces = set(namespaces.get(name, set())) | {
                ns for (ns, _), cq in local_queues.items() if cq == name
            }
        queues[(kind, name)] = queue

    # Lent: per Cohort and (flavor, resource), among its direct members (lending.py).
    for (kind, name), node in nodes.items():
        if kind != "Cohort" or not node.children:
            continue
        pool_totals: dict[str, dict[str, Amount]] = {}
        for fr in node.subtree:
            borrowed = {f"{c.kind}/{c.name}": c.borrowed(fr) for c in node.children}
            unused = {}
            for c in node.children:
                offered = c.subtree.get(fr, 0) - c.local_quota(fr)
                drawn = max(0, c.usage.get(fr, 0) - c.local_quota(fr))
                unused[f"{c.kind}/{c.name}"] = max(0, offered - drawn)
            lending = share_out(borrowed, unused, node.quotas[fr].nominal if fr in node.quotas else 0)
            key = reading.resource_key(fr[1])
            if key is None:
                continue
            for member, lent in lending.lent.items():
                child_kind, child_name = member.split("/", 1)
                queues[(child_kind, child_name)].figures(key).lent += lent
            totals = pool_totals.setdefault(key, {"borrowed": 0, "lent": 0, "pool": 0, "fromAbove": 0})
            totals["borrowed"] += sum(borrowed.values())
            totals["lent"] += sum(lending.lent.values(), Fraction(0))
            totals["pool"] += lending.pool
            totals["fromAbove"] += lending.from_above
        model.pools[("kueue", name)] = pool_totals
    for (kind, name), node in nodes.items():  # a cohort's namespaces: its members'
        if kind == "ClusterQueue":
            current = node.parent
            while current is not None:
                queues[("Cohort", current.name)].namespaces |= queues[(kind, name)].namespaces
                current = current.parent

    ordered = [q for (kind, _), q in queues.items() if kind == "Cohort"]
    ordered += [q for (kind, _), q in queues.items() if kind == "ClusterQueue"]
    for (namespace, name), cq in sorted(local_queues.items()):
        queue = Queue("kueue", "LocalQueue", f"{namespace}/{name}", cq, None, namespace=namespace)
        queue.namespaces = {namespace}
        for key in RESOURCES:
            queue.figures(key).used = lq_usage.get((namespace, name), {}).get(key, 0)
        parent = queues.get(("ClusterQueue", cq))
        mine = {_key(w) for w in lq_waiting.get((namespace, name), [])}
        queue.pending = [p for p in parent.pending if p.workload in mine] if parent is not None else []
        ordered.append(queue)
    for queue in ordered:
        queue.share["gangweb"] = gangweb_share(queue)
    model.queues.extend(ordered)
