"""What the queue readers need of the cluster: each pod's requests by the engine's own rules (GPUs by the
one GPU rule, DRA devices included), whether it runs, and the labels, annotations, owners and scheduler
name that tie it to a queue; the cluster's total; which DRA DeviceClasses are GPUs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.engine.resources import CPU as ENGINE_CPU
from scheduler.engine.resources import MEMORY as ENGINE_MEMORY
from scheduler.engine.resources import is_gpu, parse_quantity
from scheduler.engine.snapshot import Snapshot
from scheduler.engine.typed_objects import parse_time
from scheduler.kinds import group_kind, is_native

from .model import CPU, GPU, MEMORY, Amount


@dataclass
class QueueMember:
    """A member (one pod) as the queue model reads it: requests, whether it runs, what ties it to a queue."""

    key: str
    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    scheduler: str
    owners: list[dict[str, Any]]
    gates: list[str]
    requests: dict[str, int]  # gpu / cpu (milli) / memory
    bound: bool
    active: bool
    created: float | None
    group: str | None  # the Kubernetes PodGroup it names (NS/NAME)
    priority: int = 0


@dataclass
class QueueReading:
    """The queue model's reading of the cluster: its members, its total, the GPU device classes and the queue
    managers' objects by kind."""

    pods: list[QueueMember] = field(default_factory=list)
    total: dict[str, int] = field(default_factory=dict)
    gpu_classes: frozenset[str] = frozenset()
    by_kind: dict[tuple[str, str], list[dict]] = field(default_factory=dict)

    def objects(self, group: str, kind: str) -> list[dict]:
        return self.by_kind.get((group, kind), [])

    def resource_key(self, name: str) -> str | None:
        """A quota's resource name as the model keys it: ``gpu`` (GPU extended resources and GPU device
        classes), ``cpu``, ``memory``; None for the rest."""
        if name in (CPU, "vcore"):
            return CPU
        if name == MEMORY:
            return MEMORY
        if is_gpu(name) or name in self.gpu_classes or name == GPU:
            return GPU
        return None

    def amount(self, name: str, value: Any) -> int:
        """A quota quantity in the model's units (cpu in millicores); ValueError when malformed."""
        key = self.resource_key(name)
        return parse_quantity(value, milli=key == CPU)


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def build_reading(
    objects: Iterable[Mapping[str, Any]],
    snapshot: Snapshot,
    *,
    requests: bool = True,
    keep: Callable[[Mapping[str, Any]], bool] | None = None,
) -> QueueReading:
    """One pass over the raw objects, with the engine's parsed snapshot for requests and nodes
    (``requests=False``: pods without their requests; ``keep``: only the raw pods it keeps).
    The ownership signals alone need neither requests nor the pods no signal can match."""
    reading = QueueReading()
    pods_raw: list[Mapping[str, Any]] = []
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        if is_native(obj, "Pod"):
            if keep is None or keep(obj):
                pods_raw.append(obj)
        else:
            reading.by_kind.setdefault(group_kind(obj), []).append(obj)  # type: ignore[arg-type]
    res = snapshot.resource_index
    cpu_col, mem_col = res.get(ENGINE_CPU), res.get(ENGINE_MEMORY)
    usable = snapshot.alloc[snapshot.node_usable] if len(snapshot.nodes) else snapshot.alloc
    reading.total = {
        GPU: int(np.asarray(snapshot.gpus(usable)).sum()) if len(usable) else 0,
        CPU: int(usable[:, cpu_col].sum()) if cpu_col is not None and len(usable) else 0,
        MEMORY: int(usable[:, mem_col].sum()) if mem_col is not None and len(usable) else 0,
    }
    if snapshot.devices is not None:
        reading.gpu_classes = frozenset(
            name for name in snapshot.devices.classes if snapshot.devices.class_matcher(name).gpu_only
        )
    for raw in pods_raw:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        index = snapshot.pod_index.get(key)
        if index is None:
            continue
        pod = snapshot.pods[index]
        row = snapshot.pod_req[index] if requests else None
        spec = raw.get("spec") or {}
        gates = spec.get("schedulingGates") or []
        reading.pods.append(
            QueueMember(
                key=key,
                namespace=pod.namespace,
                name=pod.name,
                labels=_str_map(meta.get("labels")),
                annotations=_str_map(meta.get("annotations")),
                scheduler=str(spec.get("schedulerName") or "default-scheduler"),
                owners=[o for o in (meta.get("ownerReferences") or []) if isinstance(o, Mapping)],
                gates=[str(g.get("name")) for g in gates if isinstance(g, Mapping)],
                requests={
                    GPU: int(snapshot.gpus(row)),
                    CPU: int(row[cpu_col]) if cpu_col is not None else 0,
                    MEMORY: int(row[mem_col]) if mem_col is not None else 0,
                }
                if requests
                else {},
                bound=bool(snapshot.pod_node[index] >= 0),
                active=pod.active,
                created=pod.created,
                group=f"{pod.namespace}/{pod.group_name}" if pod.group_name else None,
                priority=int(snapshot.pod_priority[index]),
            )
        )
    return reading


def created_at(obj: Mapping[str, Any]) -> float:
    """An object's creationTimestamp as seconds (unknown: +inf, last in every order)."""
    try:
        value = parse_time((obj.get("metadata") or {}).get("creationTimestamp"), "metadata.creationTimestamp")
    except ValueError:
        return float("inf")
    return value if value is not None else float("inf")


def add(into: dict[str, Amount], other: Mapping[str, Amount]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value
