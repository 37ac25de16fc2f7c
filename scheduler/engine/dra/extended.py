"""DRA extended resources (DeviceClass ``spec.extendedResourceName``, KEP-5004): a pod that requests an
extended resource (``nvidia.com/gpu``) on a node that does not advertise it is served from that node's
devices of the class, as kube-scheduler's DynamicResources plugin does (it writes a claim for the pod,
annotated ``resource.kubernetes.io/extended-resource-claim``, with one ``ExactCount`` request per
resource). Every DeviceClass also serves its implicit name ``deviceclass.resource.kubernetes.io/<class>``.

The resource keeps its one column, so the same request vector fits either kind of node:

- a node whose ``status.allocatable`` has the resource (a device plugin) keeps that capacity, and the
  pods bound there use it, as before;
- on a node without it (allocatable absent or 0) the capacity is the node's usable devices of the class,
  and the usage their holders: devices a claim holds are charged there to the pod that frees them
  (``DeviceIndex.charge``). A pod running there through its extended-resource claim is charged through
  that claim only (its own request of the resource is dropped from its row, or it would count twice).

When the resource is a GPU by ``is_gpu`` the devices counted in its column are left out of ``dra/gpu``,
so each GPU is counted once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..resources import is_gpu

if TYPE_CHECKING:
    from .devices import DeviceIndex

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"


class Served:
    """One extended resource served from DRA devices: its class, the devices counted in its column (usable,
    on a node without the resource in its allocatable) and those nodes."""

    __slots__ = ("class_name", "devices", "nodes")

    def __init__(self, class_name: str, devices: np.ndarray, nodes: np.ndarray) -> None:
        self.class_name, self.devices, self.nodes = class_name, devices, nodes


class ExtendedResources:
    def __init__(self, index: DeviceIndex) -> None:
        snap = index.snapshot
        requested = {name for pod in snap.pods if pod.active for name in pod.requests}
        classes: dict[str, str] = {}
        for device_class in sorted(index.classes.values(), key=lambda c: c.name):
            # The explicit name first, the implicit one after; the first class by name wins a tie.
            if device_class.extended_resource:
                classes.setdefault(device_class.extended_resource, device_class.name)
        for device_class in sorted(index.classes.values(), key=lambda c: c.name):
            classes.setdefault(IMPLICIT_PREFIX + device_class.name, device_class.name)
        self.served: dict[str, Served] = {}
        self.notes: dict[str, str] = {}  # resource -> what the class's selectors could not evaluate
        self.gpu_devices = np.zeros(len(index.devices), dtype=bool)
        for name in sorted(requested & set(classes)):
            matcher = index.class_matcher(classes[name])
            note = index.cel_note(matcher)
            if note:
                self.notes[name] = f"{name} from DeviceClass {classes[name]}: {note}"
            nodes = np.array([not node.allocatable.get(name) for node in snap.nodes], dtype=bool)
            local = index.local
            on_node = local >= 0
            devices = matcher.matches & index.usable & on_node
            devices[on_node] &= nodes[local[on_node]]
            self.served[name] = Served(classes[name], devices, nodes)
            if is_gpu(name):
                self.gpu_devices |= devices

    def node_capacity(self, alloc: np.ndarray, resource_index: Mapping[str, int], local: np.ndarray) -> None:
        for name, served in self.served.items():
            nodes = local[served.devices]
            if len(nodes):
                alloc[:, resource_index[name]] += np.bincount(nodes, minlength=len(alloc))

    def drop_claimed_requests(
        self, index: DeviceIndex, req: np.ndarray, node_of: np.ndarray, resource_index: Mapping[str, int]
    ) -> None:
        """A bound pod on a DRA-serving node whose extended-resource claim holds its devices is charged
        through the claim: its own request of the resource leaves its row."""
        snap = index.snapshot
        for claim in index.claims.values():
            if not claim.extended:
                continue
            for consumer in claim.reserved_for:
                pod = (
                    snap.pod_index.get(f"{claim.namespace}/{consumer.name}")
                    if consumer.kind == "Pod"
                    else None
                )
                if pod is None or node_of[pod] < 0:
                    continue
                for name, served in self.served.items():
                    if served.nodes[node_of[pod]]:
                        req[pod, resource_index[name]] = 0

    def charge_device(self, device: int, row: np.ndarray, resource_index: Mapping[str, int]) -> None:
        for name, served in self.served.items():
            if served.devices[device]:
                row[resource_index[name]] += 1
