"""DRA devices as capacity: ResourceSlices, DeviceClasses and claims turned into resource columns.

Built by ``Snapshot`` only when the snapshot holds DRA objects, so other snapshots pay nothing. Every
distinct device request of a pending pod (DeviceClass plus the CEL selectors of the class and the
request) becomes a *matcher column* ``dra:<class>[#n]``: a node's capacity there is the number of its
devices that match, a running pod "requests" the matching devices its claims hold, a pending pod the
count it asks for. ``allocationMode: All`` gets a column ``dra-all:...`` of capacity 1 per node that
has matching devices, which every holder of one of them uses up. The column ``dra/gpu`` counts GPU
devices (``resources.is_gpu_device``) so GPU figures include them. With that, placement, victims,
reprieval and every policy work on DRA devices unchanged (docs/engine.md, "DRA devices").

A claim's devices are charged to one pod of the claim's single consumer unit (all of ``reservedFor``:
pods, or a PodGroup's running pods), so evicting that unit frees them. A claim whose consumers span
several units, or include a pod that is not running, or that nobody reserves, holds its devices
for good: evicting some of its consumers frees nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backref import SnapshotRef
from ..resources import is_gpu_device
from .cel import CelError, evaluate
from .extended import ExtendedResources
from .objects import (
    ALL_DEVICES,
    ClaimRef,
    ClaimSpec,
    Device,
    DeviceClass,
    Request,
    ResourceClaim,
    ResourceSlice,
)
from .sharedpools import mark_shared, reach_capacity

if TYPE_CHECKING:
    from ..snapshot import Snapshot
    from ..typed_objects import Pod

GPU_COLUMN = "dra/gpu"
IMPOSSIBLE = "dra:unsatisfiable"  # capacity 0 everywhere: a pod asking for it never fits
WALKS_MAPS = ("exists", "all(", "map(", "filter(", "size(", " in ")
DRA_KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate")


def has_dra(parsed: Mapping[str, Mapping[str, Any]]) -> bool:
    return any(parsed.get(kind) for kind in DRA_KINDS) or any(
        pod.claim_refs for pod in parsed["Pod"].values()
    )


class Matcher:
    """One distinct device request shape: class, selectors, mode; its column and matching devices."""

    __slots__ = ("all_mode", "class_name", "column", "expressions", "gpu_only", "matches", "shared")

    def __init__(self, class_name: str, expressions: tuple[str, ...], all_mode: bool, column: str) -> None:
        self.class_name, self.expressions, self.all_mode, self.column = (
            class_name,
            expressions,
            all_mode,
            column,
        )
        self.matches: np.ndarray = np.zeros(0, dtype=bool)  # per device
        self.gpu_only = False
        self.shared = False  # served from pools shared by several nodes (sharedpools.py)


class DeviceIndex:
    snapshot = SnapshotRef()  # weak: no reference cycle with the snapshot that holds this index

    def __init__(self, snapshot: Snapshot, parsed: Mapping[str, Mapping[str, Any]]) -> None:
        self.snapshot = snapshot
        self.classes: dict[str, DeviceClass] = dict(parsed["DeviceClass"])
        self.claims: dict[str, ResourceClaim] = dict(parsed["ResourceClaim"])
        self.templates = dict(parsed["ResourceClaimTemplate"])
        self.notes: dict[str, list[str]] = {}  # per pod or group key: what was not modelled
        self.cel_errors: dict[tuple[str, str], str] = {}  # (expression, class) -> the error
        self._matchers: dict[tuple[str, tuple[str, ...], bool], Matcher] = {}  # (class, expressions, all)
        self._class_matchers: dict[str, Matcher] = {}
        self.devices = self._current_devices(parsed["ResourceSlice"].values())
        self.device_at = {d.key: i for i, d in enumerate(self.devices)}
        self.local = self._local_nodes()
        self.gpu = np.array([is_gpu_device(d.driver, d.attributes) for d in self.devices], dtype=bool)
        self.usable = np.array([not d.tainted for d in self.devices], dtype=bool)
        self.holder: dict[int, ResourceClaim] = {}
        for claim in sorted(self.claims.values(), key=lambda c: c.key):
            for key in claim.allocated:
                i = self.device_at.get(key)
                if i is not None:
                    self.holder.setdefault(i, claim)
        self.pending_needs: dict[int, list[Request | None]] = {}  # None: a need that cannot be met
        self.extended = ExtendedResources(self)  # extended resources some pod requests, served by DRA

    # -- devices -------------------------------------------------------------------------------
    @staticmethod
    def _current_devices(slices: Iterable[ResourceSlice]) -> list[Device]:
        """Devices of each pool's newest generation (older slices are being replaced), in a stable order."""
        newest: dict[tuple[str, str], int] = {}
        for s in slices:
            newest[(s.driver, s.pool)] = max(newest.get((s.driver, s.pool), 0), s.generation)
        seen: dict[tuple[str, str, str], Device] = {}
        for s in sorted(slices, key=lambda s: s.name):
            if s.generation == newest[(s.driver, s.pool)]:
                for device in s.devices:
                    seen.setdefault(device.key, device)
        return [seen[k] for k in sorted(seen)]

    def _local_nodes(self) -> np.ndarray:
        """The node index each device belongs to when exactly one snapshot node reaches it, else -1
        (-2: reachable from several nodes, a shared pool; those devices are not node capacity)."""
        snap = self.snapshot
        out = np.full(len(self.devices), -1, dtype=np.int64)
        cache: dict[int, list[int]] = {}
        everywhere = list(range(len(snap.nodes)))
        self.reach: dict[int, list[int]] = {}  # device -> the nodes that reach it, for shared-pool devices
        for i, device in enumerate(self.devices):
            kind, value = device.scope
            if kind == "node":
                out[i] = snap.node_index.get(value, -1)
                continue
            reach: list[int] | None
            if kind == "all":
                reach = everywhere
            else:
                reach = cache.get(id(value))
                if reach is None:
                    reach = cache[id(value)] = [
                        n
                        for n, node in enumerate(snap.nodes)
                        if any(t.matches(node.name, node.labels) for t in value)
                    ]
            out[i] = reach[0] if len(reach) == 1 else (-2 if reach else -1)
            if len(reach) > 1:
                self.reach[i] = reach
        return out

    # -- matchers ------------------------------------------------------------------------------
    def matcher(self, request: Request, where: str) -> Matcher | None:
        """The matcher of a request (None when its DeviceClass is missing)."""
        device_class = self.classes.get(request.class_name)
        if device_class is None:
            return None
        expressions = tuple(s.expression for s in device_class.selectors + request.selectors)
        key = (request.class_name, expressions, request.mode == ALL_DEVICES)
        found = self._matchers.get(key)
        if found is None:
            prefix = "dra-all:" if key[2] else "dra:"
            same_class = sum(1 for k in self._matchers if k[0] == key[0] and k[2] == key[2])
            column = f"{prefix}{request.class_name}" + (f"#{same_class}" if same_class else "")
            found = self._matchers[key] = Matcher(request.class_name, expressions, key[2], column)
            self._evaluate(found)
        return found  # a CEL error's note is added by the caller through cel_note

    def pending_matcher(self, request: Request) -> Matcher:
        """The matcher of a request in ``pending_needs``, which ``columns`` fills only with requests whose
        DeviceClass exists (None stands for the others)."""
        matcher = self.matcher(request, "")
        assert matcher is not None, request.class_name
        return matcher

    def class_matcher(self, class_name: str) -> Matcher:
        """The devices a DeviceClass's own selectors match (no column: ``extended.py``'s resources)."""
        found = self._class_matchers.get(class_name)
        if found is None:
            expressions = tuple(s.expression for s in self.classes[class_name].selectors)
            found = self._class_matchers[class_name] = Matcher(class_name, expressions, False, "")
            self._evaluate(found)
        return found

    def _evaluate(self, matcher: Matcher) -> None:
        by_signature: dict[tuple[object, ...], bool] = {}
        matches = np.zeros(len(self.devices), dtype=bool)
        text = " ".join(matcher.expressions)
        # Only the attributes and capacities an expression names can change its answer (a uuid differs
        # on every device), unless it walks a whole map.
        walks = any(word in text for word in WALKS_MAPS)
        for i, device in enumerate(self.devices):
            signature = device.signature(None if walks else text)
            result = by_signature.get(signature)
            if result is None:
                result = by_signature[signature] = self._matches(matcher, device)
            matches[i] = result
        matcher.matches = matches
        matcher.gpu_only = bool(matches.any()) and bool(self.gpu[matches].all())

    def _matches(self, matcher: Matcher, device: Device) -> bool:
        for expression in matcher.expressions:
            try:
                if not evaluate(expression, device.driver, device.attributes, device.capacity):
                    return False
            except CelError as exc:
                self.cel_errors.setdefault(
                    (expression, matcher.class_name), f"{exc} (device {'/'.join(device.key)})"
                )
                return False
        return True

    def cel_note(self, matcher: Matcher) -> str | None:
        errors = [
            f"CEL selector {e!r} could not be evaluated: {self.cel_errors[(e, matcher.class_name)]}"
            for e in matcher.expressions
            if (e, matcher.class_name) in self.cel_errors
        ]
        return "; ".join(errors) + "; such devices were counted as not matching" if errors else None

    # -- claims of pods and groups -------------------------------------------------------------
    def resolve(self, namespace: str, ref: ClaimRef, generated: Mapping[str, str]) -> tuple[Any, str]:
        """(claim, label) for an existing claim, (ClaimSpec, label) for one still to be created from a
        template, (None, why) when neither exists."""
        if ref.claim:
            claim = self.claims.get(f"{namespace}/{ref.claim}")
            return (
                (claim, f"ResourceClaim {namespace}/{ref.claim}")
                if claim
                else (None, f"ResourceClaim {namespace}/{ref.claim} is missing")
            )
        name = generated.get(ref.name)
        if name and f"{namespace}/{name}" in self.claims:
            return self.claims[f"{namespace}/{name}"], f"ResourceClaim {namespace}/{name}"
        template = self.templates.get(f"{namespace}/{ref.template}")
        if template is None:
            return None, f"ResourceClaimTemplate {namespace}/{ref.template} is missing"
        return template.spec, f"ResourceClaimTemplate {namespace}/{ref.template}"

    def group_shares(self, pod: Pod, ref: ClaimRef) -> bool:
        group = self.snapshot.group_of(pod)
        return group is not None and any(ref.same(g) for g in group.claim_refs)

    def spec_notes(self, spec: ClaimSpec, label: str) -> list[str]:
        notes = []
        if spec.constraints:
            notes.append(f"{label}: matchAttribute constraints are not modelled")
        for request in spec.requests:
            if request.alternatives:
                notes.append(f"{label}: request {request.name!r} is planned with its first alternative only")
            if request.capacity:
                notes.append(
                    f"{label}: request {request.name!r} asks for consumable capacity, which is not modelled"
                )
        return notes

    def columns(self) -> list[str]:
        """Columns for every pending pod's own claims (group-level ones are checked per gang)."""
        snap = self.snapshot
        wanted: set[str] = {GPU_COLUMN}
        shared_needed: set[str] = set()
        for i, pod in enumerate(snap.pods):
            if self.extended.notes and not pod.node_name and pod.active:
                for name in sorted(set(pod.requests) & set(self.extended.notes)):
                    self.notes.setdefault(pod.key, []).append(self.extended.notes[name])
            if pod.node_name or not pod.active or not pod.claim_refs:
                continue
            notes = self.notes.setdefault(pod.key, [])
            needs: list[Request | None] = []
            for ref in pod.claim_refs:
                if self.group_shares(pod, ref):
                    continue
                source, label = self.resolve(pod.namespace, ref, pod.claim_statuses)
                if source is None:
                    notes.append(f"{label}, so pod {pod.key} cannot get its devices")
                    needs.append(None)
                    continue
                if isinstance(source, ResourceClaim):
                    if source.is_allocated:
                        notes.append(
                            f"{label} is already allocated; the node its devices pin the pod to is not checked"
                        )
                        continue
                    if ref.claim:
                        if source.key in shared_needed:
                            continue  # one allocation serves every pod that names the claim
                        shared_needed.add(source.key)
                    source = source.spec
                notes.extend(self.spec_notes(source, label))
                for request in source.requests:
                    if request.admin:
                        continue
                    matcher = self.matcher(request, label)
                    if matcher is None:
                        notes.append(f"{label}: DeviceClass {request.class_name} is missing")
                        needs.append(None)
                        continue
                    note = self.cel_note(matcher)
                    if note:
                        notes.append(f"{label}: {note}")
                    shared_note = mark_shared(self, matcher)
                    if shared_note:
                        notes.append(f"{label}: {shared_note}")
                    needs.append(request)
                    wanted.add(matcher.column)
            if needs:
                self.pending_needs[i] = needs
            if not notes:
                self.notes.pop(pod.key, None)
        if any(v is None for needs in self.pending_needs.values() for v in needs):
            wanted.add(IMPOSSIBLE)
        for matcher in self._matchers.values():
            wanted.add(matcher.column)
        return sorted(wanted)

    # -- capacity ------------------------------------------------------------------------------
    def node_capacity(self, alloc: np.ndarray, index: Mapping[str, int]) -> None:
        local = self.local >= 0
        gpus = local & self.gpu & self.usable & ~self.extended.gpu_devices  # those count in their own column
        self._add_per_node(alloc[:, index[GPU_COLUMN]], gpus)
        self.extended.node_capacity(alloc, index, self.local)
        for m in self._matchers.values():
            column = alloc[:, index[m.column]]
            self._add_per_node(column, local & m.matches & self.usable)
            if m.shared:
                column += reach_capacity(self, m)
            if m.all_mode:
                np.minimum(column, 1, out=column)

    def _add_per_node(self, column: np.ndarray, mask: np.ndarray) -> None:
        nodes = self.local[mask]
        if len(nodes):
            column += np.bincount(nodes, minlength=len(column))

    def charge(self, req: np.ndarray, node_of: np.ndarray, index: Mapping[str, int]) -> np.ndarray:
        """Fill the pods' request rows: pending pods' needs, held devices on their holders. Returns the
        usage charged to nobody (held for good), per node."""
        snap = self.snapshot
        fixed = np.zeros((len(snap.nodes), len(index)), dtype=np.int64)
        extended = self.extended
        # With GPUs served as an extended resource, dra/gpu no longer holds every GPU device of a node:
        # pending pods then ask only their matcher columns (their own GPU figure is not needed).
        count_pending_gpus = not extended.gpu_devices.any()
        for pod_idx, needs in self.pending_needs.items():
            for request in needs:
                if request is None:
                    req[pod_idx, index[IMPOSSIBLE]] = 1
                    continue
                matcher = self.pending_matcher(request)
                if matcher.all_mode:
                    req[pod_idx, index[matcher.column]] += 1
                else:
                    req[pod_idx, index[matcher.column]] += request.count
                    if matcher.gpu_only and count_pending_gpus and not matcher.shared:
                        req[pod_idx, index[GPU_COLUMN]] += request.count
        if extended.served:
            extended.drop_claimed_requests(self, req, node_of, index)
        held_by: dict[str, int | None] = {}
        matchers = list(self._matchers.values())
        for device, claim in self.holder.items():
            node = int(self.local[device])
            if node < 0:
                continue
            if claim.key not in held_by:
                held_by[claim.key] = self.charged_pod(claim, node, node_of)
            row = req[held_by[claim.key]] if held_by[claim.key] is not None else fixed[node]
            if self.gpu[device] and not extended.gpu_devices[device]:
                row[index[GPU_COLUMN]] += 1
            if extended.served:
                extended.charge_device(device, row, index)
            for m in matchers:
                if m.matches[device]:
                    row[index[m.column]] += 1
        return fixed

    def consumer_pods(self, claim: ResourceClaim) -> list[int] | None:
        """Running pods that consume the claim; None when one consumer is not a running pod we know."""
        snap = self.snapshot
        pods: list[int] = []
        for consumer in claim.reserved_for:
            if consumer.kind == "Pod":
                i = snap.pod_index.get(f"{claim.namespace}/{consumer.name}")
                if i is None or not snap.pods[i].active:
                    if i is None:
                        return None
                    continue  # a finished pod no longer holds anything
                if snap.pod_node[i] < 0:
                    return None
                pods.append(i)
            elif consumer.kind == "PodGroup":
                members = snap.group_members.get(f"{claim.namespace}/{consumer.name}", [])
                running = [p for p in members if snap.pod_node[p] >= 0]
                if not running or len(running) < sum(1 for p in members if snap.pods[p].active):
                    return None  # a pending member will use the claim too
                pods.extend(running)
            else:
                return None
        return sorted(set(pods)) or None

    def charged_pod(self, claim: ResourceClaim, node: int, node_of: np.ndarray) -> int | None:
        """The pod whose eviction stands for freeing the claim: one on the device's node, when all
        consumers form one victim unit; else None (the devices stay held)."""
        from ..victims import unit_key

        pods = self.consumer_pods(claim)
        if not pods or len({unit_key(self.snapshot, p) for p in pods}) != 1:
            return None
        on_node = [p for p in pods if node_of[p] == node]
        return on_node[0] if on_node else None

    def free_devices(self, candidates: np.ndarray) -> np.ndarray:
        """Devices matching ``candidates`` that no claim holds and no taint keeps, reachable by a node."""
        held = np.zeros(len(self.devices), dtype=bool)
        held[list(self.holder)] = True
        free: np.ndarray = candidates & self.usable & ~held & (self.local != -1)
        return free


def notes_for(index: DeviceIndex | None, keys: Sequence[str]) -> list[str]:
    if index is None:
        return []
    seen: list[str] = []
    for key in keys:
        for note in index.notes.get(key, []):
            if note not in seen:
                seen.append(note)
    return seen
