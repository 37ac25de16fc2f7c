"""Snapshot files in, an indexed read-only ``Snapshot`` out.

The snapshot contract (docs/design.md): a ``List``/``*List`` or a multi-document YAML/JSON stream of
Nodes, Pods, PodGroups, CompositePodGroups, Workloads, PodDisruptionBudgets, PriorityClasses and the
DRA kinds (ResourceClaims, ResourceClaimTemplates, ResourceSlices, DeviceClasses; ``dra/devices.py``).
Objects are told by API group and kind (``scheduler/kinds.py``): a Volcano or KAI ``PodGroup`` is not a
Kubernetes PodGroup. Unknown kinds are ignored; a malformed object raises ``SnapshotError`` naming the object
and field.

Everything a plan needs per node is precomputed once here (capacity matrices, pods per node,
effective priorities, victim units), so plans never rescan the raw objects.
"""

from __future__ import annotations

import copy
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from scheduler.kinds import native_kind
from scheduler.words import plural

from .allowance import Allowance
from .checkpoints import NO_INTERVALS, Intervals
from .dra.objects import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from .errors import SnapshotError, object_label
from .reading import read_snapshot, snapshot_documents
from .resources import CPU, EPHEMERAL, MEMORY, PODS, is_gpu
from .typed_objects import NEVER, PREEMPT, DisruptionBudget, Group, Node, Pod, PriorityClass, Workload

MAX_TREE_DEPTH = 8  # guard for parentCompositePodGroupName chains (the API allows 4 levels)

_PARSERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "Node": Node,
    "Pod": Pod,
    "PodGroup": lambda obj: Group(obj, "PodGroup"),
    "CompositePodGroup": lambda obj: Group(obj, "CompositePodGroup"),
    "PodDisruptionBudget": DisruptionBudget,
    "PriorityClass": PriorityClass,
    "Workload": Workload,
    "ResourceSlice": ResourceSlice,
    "DeviceClass": DeviceClass,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
}

# The snapshot contract (docs/design.md "Snapshot files"): the one command that dumps every kind above. README,
# docs/design.md and the what-if page print it; tests/scheduler/engine/test_dump_command.py holds them to it.
DUMP_COMMAND = (
    "kubectl get nodes,pods,podgroups,compositepodgroups,workloads,pdb,priorityclasses,"
    "resourceclaims,resourceclaimtemplates,resourceslices,deviceclasses -A -o yaml"
)


def load_snapshot(source: str | os.PathLike[str] | BinaryIO) -> Snapshot:
    """Read a snapshot from a file path, a binary stream (standard input) or the text itself (JSON or YAML),
    within the bounds of ``reading.py``. A ``Path`` is always a file; a string is text when it holds a
    line break, or is one line of ``{...}``/``[...]`` that names no file (``[snap].json`` is a file)."""
    if isinstance(source, str) and _is_text(source):
        return parse_snapshot(snapshot_documents(source))
    if isinstance(source, (str, os.PathLike)) or hasattr(source, "read"):
        return parse_snapshot(read_snapshot(source))
    raise SnapshotError(f"expected a snapshot path, stream or text, got {type(source).__name__}")


def load_objects(source: str | os.PathLike[str] | BinaryIO) -> list[Any]:
    """The raw objects of a snapshot source, read as ``load_snapshot`` reads it and flattened: for the
    readers beside the engine (the queue model) that need the kinds the engine ignores."""
    if isinstance(source, str) and _is_text(source):
        return _flatten(snapshot_documents(source))
    if isinstance(source, (str, os.PathLike)) or hasattr(source, "read"):
        return _flatten(read_snapshot(source))
    raise SnapshotError(f"expected a snapshot path, stream or text, got {type(source).__name__}")


def _is_text(source: str) -> bool:
    if "\n" in source:
        return True
    stripped = source.strip()
    return (stripped[:1], stripped[-1:]) in (("{", "}"), ("[", "]")) and not os.path.lexists(source)


def _flatten(documents: Iterable[Any]) -> list[Any]:
    """Objects out of documents, lists and ``*List`` objects, in input order. Iterative: nesting
    depth is bounded only by the parser, never by Python's recursion limit."""
    out: list[Any] = []
    # Each level: its items, and the (kind, apiVersion) its kind-less items take (typed lists only).
    pending: list[tuple[Iterator[tuple[int, Any]], ItemType | None]] = [(enumerate(documents), None)]
    while pending:
        level, item_type = pending[-1]
        for position, doc in level:
            if isinstance(doc, list):
                pending.append((enumerate(doc), None))
                break
            if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
                items = doc.get("items")
                if items is None:
                    continue
                if not isinstance(items, list):
                    raise SnapshotError(
                        f"{doc.get('kind')} (document {position + 1}): items: expected a list"
                    )
                pending.append((enumerate(items), _item_type(doc)))
                break
            if item_type is not None and isinstance(doc, dict) and not doc.get("kind"):
                doc = {
                    **doc,
                    "kind": item_type.kind,
                    "apiVersion": doc.get("apiVersion") or item_type.api_version,
                }
            out.append(doc)
        else:
            pending.pop()
    return out


class ItemType(NamedTuple):
    """What the kind-less items of a typed list are."""

    kind: str
    api_version: Any


def _item_type(typed_list: Mapping[str, Any]) -> ItemType | None:
    """``NodeList`` -> ("Node", its apiVersion): the API server leaves kind and apiVersion out of
    the items of a typed list. A plain ``List`` says nothing about its items."""
    kind = str(typed_list.get("kind"))
    return ItemType(kind[: -len("List")], typed_list.get("apiVersion")) if kind != "List" else None


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused meanwhile (as it was after). Parsing and indexing allocate
    millions of objects and free none, so its passes find nothing: they cost up to half of a parse (a DRA
    snapshot's devices and claims) and of ``LiveSnapshot``'s index rebuild (20,000 nodes / 40,000 pods,
    load 3.5: median 1.6 s -> 0.8 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _newest(pods: Iterable[Pod]) -> float | None:
    """The newest start or creation time of these pods (None when none has one)."""
    return max((t for pod in pods for t in (pod.start_time, pod.created) if t is not None), default=None)


def _now(*newest: float | None) -> float:
    """The snapshot's "now": the newest of these times, 0 when there is none."""
    return max((t for t in newest if t is not None), default=0.0)


def _columns(names: set[str], dra_columns: list[str]) -> list[str]:
    """The snapshot's resource columns: the four every pod has, the other names sorted, the DRA columns."""
    fixed = [PODS, CPU, MEMORY, EPHEMERAL]
    return fixed + sorted(names - set(fixed) - set(dra_columns)) + dra_columns


def _rows_of(amounts: list[Mapping[str, int]], column: Mapping[str, int], pods_column: int) -> np.ndarray:
    """One row per mapping of resource name to amount, in ``column``'s layout, with ``pods_column`` in the
    first column (1 for a pod's requests, 0 for a node's allocatable, which names its own). Equal mappings
    share a row of a small table (a Job's pods all ask the same, a node pool's nodes all have the same):
    cell by cell, filling 40,000 pods' rows took most of the pods' index (docs/measurements.md)."""
    shapes: dict[tuple[tuple[str, int], ...], int] = {}
    shape_of = []
    for mapping in amounts:
        shape = tuple(mapping.items())
        row = shapes.get(shape)
        if row is None:
            row = shapes[shape] = len(shapes)
        shape_of.append(row)
    table = np.zeros((len(shapes), len(column)), dtype=np.int64)
    table[:, 0] = pods_column
    for shape, row in shapes.items():
        for name, value in shape:
            table[row, column[name]] = value
    return table[np.array(shape_of, dtype=np.int64)]


def parse_snapshot(objects: Iterable[Any], intervals: Intervals = NO_INTERVALS) -> Snapshot:
    """Build a ``Snapshot`` from raw object dicts (lists are flattened), the collector paused; workloads
    that report no checkpoint are assumed to save at ``intervals`` (``with_lost_work``)."""
    with collector_paused():
        return _parse(objects, intervals)


def _parse(objects: Iterable[Any], intervals: Intervals = NO_INTERVALS) -> Snapshot:
    parsed: dict[str, dict[str, Any]] = {kind: {} for kind in _PARSERS}
    for position, obj in enumerate(_flatten(objects)):
        if not isinstance(obj, dict):
            raise SnapshotError(
                f"object #{position + 1}: expected a Kubernetes object, got {type(obj).__name__}"
            )
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise SnapshotError(f"{object_label('object', obj, position + 1)}: kind: required")
        parser = _PARSERS.get(native_kind(obj) or "")
        if parser is None:
            continue
        try:
            item = parser(obj)
        except ValueError as exc:
            raise SnapshotError(f"{object_label(kind, obj, position + 1)}: {exc}") from None
        except (AttributeError, TypeError) as exc:  # a field of an unexpected shape deep inside
            raise SnapshotError(
                f"{object_label(kind, obj, position + 1)}: malformed object ({exc})"
            ) from None
        key = getattr(item, "key", None) or item.name
        if key in parsed[kind]:
            raise SnapshotError(f"{kind} {key}: appears twice in the snapshot")
        parsed[kind][key] = item
    return Snapshot(parsed, intervals)


class Snapshot:
    """Read-only, indexed cluster state. Nodes are sorted by name; pods with a node name by key, then pods
    without one by key (``first_unbound`` is the first of those)."""

    # What victims lose (docs/engine.md "Lost work"): the assumed checkpoint intervals and, when the pipeline
    # gives one, the lost-work budget left this hour. Set by ``with_lost_work``.
    intervals: Intervals = NO_INTERVALS
    allowance: Allowance | None = None
    _base: Snapshot | None = None  # the snapshot a ``with_lost_work`` copy shares its victim units with

    def __init__(self, parsed: Mapping[str, Mapping[str, Any]], intervals: Intervals = NO_INTERVALS) -> None:
        self.intervals = intervals
        with collector_paused():  # however it is built: a parse, a LiveSnapshot's index, a local cut
            self._build(parsed)

    def _build(self, parsed: Mapping[str, Mapping[str, Any]]) -> None:
        self.warnings: list[str] = []
        # Bound pods no victim unit may hold (``protecting``): a queue manager's, by default.
        self.protected: frozenset[int] = frozenset()
        self.nodes: list[Node] = [parsed["Node"][k] for k in sorted(parsed["Node"])]
        self.node_index = {node.name: i for i, node in enumerate(self.nodes)}
        pods = sorted(parsed["Pod"].items())
        # Pods with a node name first, then those without, each by key: a change to pods without one (a
        # gang's pending pods) moves no other pod's index, so ``with_unbound`` patches only the tail.
        self.pods: list[Pod] = [pod for _, pod in pods if pod.node_name is not None]
        self.first_unbound = len(self.pods)
        self.pods += [pod for _, pod in pods if pod.node_name is None]
        self.pod_index = {pod.key: i for i, pod in enumerate(self.pods)}
        self.groups: dict[str, Group] = dict(parsed["PodGroup"])
        self.composites: dict[str, Group] = dict(parsed["CompositePodGroup"])
        self.pdbs: list[DisruptionBudget] = [
            parsed["PodDisruptionBudget"][k] for k in sorted(parsed["PodDisruptionBudget"])
        ]
        self.priority_classes: dict[str, PriorityClass] = dict(parsed["PriorityClass"])
        defaults = [pc for pc in self.priority_classes.values() if pc.global_default]
        self.default_priority = max((pc.value for pc in defaults), default=0)
        self.cache: dict[Any, Any] = {}  # per-snapshot memo for placement masks, domains...
        self.devices = None  # DRA devices as columns (dra/devices.py), only when the snapshot has DRA objects
        from .dra.devices import DeviceIndex, has_dra  # local: most snapshots have none

        if has_dra(parsed):
            self.devices = DeviceIndex(self, parsed)

        self._index_resources()
        self._index_pods()
        # "Now" comes from the snapshot itself so that the same file always gives the same plan.
        self._bound_now = _newest(self.pods[: self.first_unbound])
        self.now = _now(self._bound_now, _newest(self.pods[self.first_unbound :]))
        from .victims import UnitIndex  # local: victims imports this module's types

        self.units = UnitIndex(self)

    # -- capacity -------------------------------------------------------------------------------
    def _index_resources(self) -> None:
        names = {name for node in self.nodes for name in node.allocatable}
        names |= {name for pod in self.pods[: self.first_unbound] for name in pod.requests}
        self._bound_names = names  # for ``with_unbound``: the columns its pods alone do not decide
        dra_columns = self.devices.columns() if self.devices is not None else []
        self.resources = _columns(
            names | {n for p in self.pods[self.first_unbound :] for n in p.requests}, dra_columns
        )
        self.resource_index = {name: i for i, name in enumerate(self.resources)}
        self.gpu_columns = [i for i, name in enumerate(self.resources) if is_gpu(name)]
        alloc = _rows_of([node.allocatable for node in self.nodes], self.resource_index, 0)
        if self.devices is not None:
            self.devices.node_capacity(alloc, self.resource_index)
        self.alloc = alloc
        self.node_usable = np.array([n.ready and not n.cordoned for n in self.nodes], dtype=bool)
        self.tainted_nodes = [i for i, n in enumerate(self.nodes) if n.taints]

    def request_vector(self, requests: Mapping[str, int]) -> np.ndarray:
        vector = np.zeros(len(self.resources), dtype=np.int64)
        vector[0] = 1
        for name, value in requests.items():
            vector[self.resource_index[name]] = value
        return vector

    def _index_pods(self) -> None:
        """Per pod its request row (``_rows_of``), node and group; the per-node lists come from one sort."""
        index, node_index = self.resource_index, self.node_index
        node_of_list: list[int] = []
        self.group_members: dict[str, list[int]] = {}
        missing_nodes = 0
        leaving: list[tuple[int, int]] = []
        for i, pod in enumerate(self.pods):
            if i == self.first_unbound:
                self._bound_members = {key: list(members) for key, members in self.group_members.items()}
            if pod.gang_key is not None:
                members = self.group_members.get(pod.gang_key)
                if members is None:
                    self.group_members[pod.gang_key] = [i]
                else:
                    members.append(i)
            node = -1
            if pod.node_name:
                if pod.terminating and pod.node_name in node_index:
                    leaving.append((i, node_index[pod.node_name]))
                if pod.active:
                    node = node_index.get(pod.node_name, -1)
                    if node < 0:
                        missing_nodes += 1
            node_of_list.append(node)
        req = _rows_of([pod.requests for pod in self.pods], index, 1)
        if len(self.pods) == self.first_unbound:
            self._bound_members = self.group_members
        node_of = np.array(node_of_list, dtype=np.int64)
        # Each node's pods ascending: a stable sort of the bound pods by node.
        bound = np.flatnonzero(node_of >= 0)
        by_node = bound[np.argsort(node_of[bound], kind="stable")]
        starts = np.searchsorted(node_of[by_node], np.arange(len(self.nodes) + 1)).tolist()
        on_nodes = by_node.tolist()
        self.pods_by_node: list[list[int]] = [
            on_nodes[starts[n] : starts[n + 1]] for n in range(len(self.nodes))
        ]
        if missing_nodes:
            self.warnings.append(
                f"{plural(missing_nodes, 'pod is', 'pods are')} bound to nodes missing from the snapshot and were ignored"
            )
        self.pod_req = req
        self.pod_node = node_of
        # Pods already terminating on a node (``holding_for``): no victim unit, no room in ``free``.
        self.leaving = np.array([i for i, _ in leaving], dtype=np.int64)
        self.leaving_node = np.array([n for _, n in leaving], dtype=np.int64)
        self.bound = bound
        used = np.zeros_like(self.alloc)
        if self.devices is not None:  # claims' devices: on the pods that hold them, or held for good
            used += self.devices.charge(req, node_of, index)
        if len(self.bound):
            np.add.at(used, node_of[self.bound], req[self.bound])
        self.used = used
        self.free = self.alloc - used
        self.pod_priority = self._pod_priorities(self.pods)

    def _pod_priorities(self, pods: list[Pod]) -> list[int]:
        """``_pod_priority`` of each pod, worked out once per group, not once per pod."""
        by_group: dict[str, int] = {}
        out = []
        for pod in pods:
            group = self.group_of(pod)
            if group is None:  # alone, or its group is missing: the pod's own priority
                out.append(self._pod_priority(pod))
                continue
            priority = by_group.get(group.key)
            if priority is None:
                priority = by_group[group.key] = self.effective_group_priority(group)
            out.append(priority)
        return out

    # -- groups and priorities ------------------------------------------------------------------
    def class_priority(self, class_name: str | None) -> int:
        if class_name:
            pc = self.priority_classes.get(class_name)
            if pc is not None:
                return pc.value
        return self.default_priority

    def group_priority(self, group: Group) -> int:
        return group.priority if group.priority is not None else self.class_priority(group.priority_class)

    def ancestors(self, group: Group) -> list[Group]:
        """The group, then its parents up the CompositePodGroup chain (cycle and depth guarded)."""
        chain, seen = [group], {group.key}
        current = group
        while current.parent and len(chain) <= MAX_TREE_DEPTH:
            parent = self.composites.get(f"{current.namespace}/{current.parent}")
            if parent is None or parent.key in seen:
                break
            chain.append(parent)
            seen.add(parent.key)
            current = parent
        return chain

    def group_of(self, pod: Pod) -> Group | None:
        return self.groups.get(pod.gang_key) if pod.gang_key is not None else None

    def effective_group_priority(self, group: Group) -> int:
        """The top-most resolvable group of the hierarchy decides (KEP-5710 GetPodPriority)."""
        return self.group_priority(self.ancestors(group)[-1])

    def _pod_priority(self, pod: Pod) -> int:
        group = self.group_of(pod)
        if group is not None:
            return self.effective_group_priority(group)
        return pod.priority if pod.priority is not None else self.class_priority(pod.priority_class)

    def preemption_policy(self, group: Group) -> str:
        """Annotation ``gangweb.io/preemption-policy``, then spec, then the PriorityClass."""
        if group.preemption_policy:
            return group.preemption_policy
        pc = self.priority_classes.get(group.priority_class or "")
        return pc.preemption_policy if pc is not None and pc.preemption_policy else PREEMPT

    def pod_preemption_policy(self, pod: Pod) -> str:
        if pod.preemption_policy:
            return pod.preemption_policy
        pc = self.priority_classes.get(pod.priority_class or "")
        return pc.preemption_policy if pc is not None and pc.preemption_policy == NEVER else PREEMPT

    def with_unbound(
        self, changed: Mapping[str, Pod | None], groups: Mapping[str, Group | None] | None = None
    ) -> Snapshot | None:
        """This snapshot with some pods without a node name added, replaced or removed (key -> the pod as it
        is now, None: gone), and some PodGroups none of whose pods has a node name (``groups``, likewise),
        made from this one's index: the pods with a node name keep their indices, rows and victim units, so
        only the unbound tail and the lost work at the new ``now`` are made again (a new gang's PodGroup and
        pods, the usual change just before a plan, in milliseconds instead of a whole index at 20,000 nodes;
        docs/measurements.md). Equal to a fresh ``Snapshot`` of the same objects
        (tests/scheduler/engine/test_live.py). None when the change reaches further: a pod with a node name
        before or after, a group with one, a pod with a start time, columns that change, DRA devices, or a
        derived copy."""
        if (
            self.devices is not None
            or self.protected
            or self._base is not None
            or self.intervals
            or self.allowance is not None
        ):
            return None
        groups = groups or {}
        if any(self._bound_members.get(key) for key in groups):
            return None  # a group with pods on nodes: their priorities, and so their units, may change
        first = self.first_unbound
        unbound = {pod.key: pod for pod in self.pods[first:]}
        for key, pod in changed.items():
            if self.pod_index.get(key, first) < first:
                return None  # it had a node name
            if pod is None:
                unbound.pop(key, None)
            elif pod.node_name is not None:
                return None
            else:
                unbound[key] = pod
        tail = [unbound[key] for key in sorted(unbound)]
        if any(pod.start_time is not None for pod in tail):
            return None  # it would lose work if evicted: a row of the victim units' sums
        names = self._bound_names | {name for pod in tail for name in pod.requests}
        if _columns(names, []) != self.resources:
            return None
        clone = copy.copy(self)
        if groups:
            clone.groups = dict(self.groups)
            for key, group in groups.items():
                if group is None:
                    clone.groups.pop(key, None)
                else:
                    clone.groups[key] = group
        clone.pods = self.pods[:first] + tail
        clone.pod_index = dict(self.pod_index)
        for pod in self.pods[first:]:
            del clone.pod_index[pod.key]
        clone.group_members = dict(self._bound_members)  # its lists shared until a tail pod joins one
        joined: set[str] = set()
        for i, pod in enumerate(tail, start=first):
            clone.pod_index[pod.key] = i
            if pod.gang_key is not None:
                if pod.gang_key not in joined:
                    joined.add(pod.gang_key)
                    clone.group_members[pod.gang_key] = list(clone.group_members.get(pod.gang_key, ()))
                clone.group_members[pod.gang_key].append(i)
        clone.pod_req = np.concatenate(
            (self.pod_req[:first], _rows_of([p.requests for p in tail], self.resource_index, 1))
        )
        clone.pod_node = np.concatenate((self.pod_node[:first], np.full(len(tail), -1, dtype=np.int64)))
        clone.pod_priority = self.pod_priority[:first] + clone._pod_priorities(tail)
        clone.now = _now(self._bound_now, _newest(tail))
        clone.warnings = list(self.warnings)
        clone.cache = {}
        with collector_paused():
            clone.units = self.units.with_unbound(clone)
        return clone

    def protecting(self, pod_keys: Iterable[str]) -> Snapshot:
        """A copy whose victim units leave these pods out: they keep their room, and no plan can take it.
        How plans stay clear of the units a queue manager placed (``scheduler/queues/plans.py``); the
        snapshot itself, shared by the planners of a process, is left as it is."""
        from .victims import UnitIndex  # local: victims imports this module's types

        clone = copy.copy(self)
        clone.protected = frozenset(self.pod_index[k] for k in pod_keys if k in self.pod_index)
        clone.cache = {}
        with collector_paused():
            clone.units = UnitIndex(clone)
        return clone

    def leaving_below(self, priority: int) -> list[int]:
        """The terminating pods a preemptor of this priority could preempt: their room is its to count on."""
        return [p for p in self.leaving.tolist() if self.pod_priority[p] < priority]

    def holding_for(self, priority: int) -> Snapshot:
        """The snapshot as a preemptor of this priority sees it: pods already terminating at its priority or
        above hold their room until they are gone, as in kube-scheduler's cache (it may preempt only lower
        pods, and a terminating one it outranks it takes with no API call). ``free`` counts every
        terminating pod gone, so this is the snapshot itself when no such pod outranks the preemptor."""
        held = [
            (p, n)
            for p, n in zip(self.leaving.tolist(), self.leaving_node.tolist())
            if self.pod_priority[p] >= priority
        ]
        if not held:
            return self
        clone = copy.copy(self)
        clone.free = self.free.copy()
        for p, n in held:
            clone.free[n] -= self.pod_req[p]
        clone.cache = {}
        clone._base = (
            self._base or self
        )  # the shared units refer to their snapshot weakly: it must outlive the copy
        return clone

    def with_lost_work(
        self, intervals: Intervals | None = None, allowance: Allowance | None = None
    ) -> Snapshot:
        """A copy whose victims' lost work assumes these checkpoint intervals for workloads that report
        none, and whose plans stay within this lost-work budget (``entry.plan``). The victim units are
        built again only when the intervals change what they lose."""
        from .victims import UnitIndex  # local: victims imports this module's types

        intervals = self.intervals if intervals is None else intervals
        if intervals == self.intervals and allowance == self.allowance:
            return self
        clone = copy.copy(self)
        clone.intervals, clone.allowance = intervals, allowance
        if intervals != self.intervals:
            clone.cache = {}
            with collector_paused():
                clone.units = UnitIndex(clone)
        else:
            clone._base = self  # the shared units refer to this snapshot weakly: it must outlive the copy
        return clone

    def gpus(self, vector_or_matrix: np.ndarray) -> Any:
        if not self.gpu_columns:
            return 0 if vector_or_matrix.ndim == 1 else np.zeros(vector_or_matrix.shape[0], dtype=np.int64)
        return vector_or_matrix[..., self.gpu_columns].sum(axis=-1)

    def __repr__(self) -> str:
        return f"<Snapshot nodes={len(self.nodes)} pods={len(self.pods)} podgroups={len(self.groups)}>"
