"""The ``cluster.state`` picture built from any cluster's Kubernetes objects.

The simulated cluster draws its own picture (``SimulatedCluster.summary()``, with GPU indices that stay
put while a pod runs). For a real cluster the API does not say which device a pod holds, so here each
node's GPUs are handed out to its pods in start order; counts, owners and waiting gangs are exact.
Same format either way, so the page does not care. Plain Python: no Django import.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler import podstate
from scheduler.engine.resources import is_gpu, parse_resource_list, pod_requests
from scheduler.engine.typed_objects import timestamp_or_none
from scheduler.simulation.state import rfc3339
from scheduler.simulation.summary import gang_shade, state_totals

RACK_LABELS = ("topology.gangweb.io/rack", "topology.kubernetes.io/zone")
NO_CLASS = "(no priority class)"


def _gpus(resources: dict[str, Any] | None) -> int:
    """GPUs in a resource list (a node's allocatable); unreadable values count as none."""
    try:
        return sum(
            value for name, value in parse_resource_list(resources, "resources").items() if is_gpu(name)
        )
    except ValueError:
        return 0


def pod_gpus(pod: dict[str, Any]) -> int:
    """GPUs a pod holds, counted by the engine's rules (kube-scheduler's effective requests)."""
    try:
        requests = pod_requests(pod.get("spec") or {})
    except ValueError:
        return 0
    return sum(value for name, value in requests.items() if is_gpu(name))


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _ready(node: dict[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def picture_from_objects(objects: Iterable[dict[str, Any]], *, now: float, cluster: str) -> dict[str, Any]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj.get("kind", ""), []).append(obj)
    class_values = {
        (pc.get("metadata") or {}).get("name"): int(pc.get("value") or 0)
        for pc in by_kind.get("PriorityClass", [])
    }
    groups = {_key(g): g for g in by_kind.get("PodGroup", [])}

    # Gangs: a PodGroup's pods, or a lone pod that asks for GPUs.
    members: dict[str, list[dict[str, Any]]] = {}
    for pod in by_kind.get("Pod", []):
        if podstate.is_finished(pod):
            continue
        group = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if group:
            members.setdefault(f"{(pod.get('metadata') or {}).get('namespace')}/{group}", []).append(pod)
        elif pod_gpus(pod):
            members.setdefault(_key(pod), []).append(pod)

    def priority_of(key: str) -> tuple[str, int]:
        spec = (groups.get(key) or {}).get("spec") or (members[key][0].get("spec") or {})
        name = spec.get("priorityClassName") or NO_CLASS
        value = spec.get("priority")
        return name, int(value if value is not None else class_values.get(name, 0))

    priorities = {key: priority_of(key) for key in members}
    classes = sorted({p for p in priorities.values()}, key=lambda p: (-p[1], p[0]))
    tier_of = {name: i for i, (name, _) in enumerate(classes)}

    gang_rows: list[dict[str, Any]] = []
    gang_ids: dict[str, int] = {}
    for key in sorted(members, key=lambda k: (-priorities[k][1], k)):
        pods = members[key]
        spec = (groups.get(key) or {}).get("spec") or {}
        running = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        gang_ids[key] = len(gang_rows)
        gang_rows.append(
            {
                "podGroup": key,
                "priorityClass": priorities[key][0],
                "priority": priorities[key][1],
                "tier": tier_of[priorities[key][0]],
                "shade": gang_shade(key),
                "disruption": next(iter(spec.get("disruptionMode") or {"single": {}})),
                "topology": bool((spec.get("schedulingConstraints") or {}).get("topology")),
                "pods": len(pods),
                "podGpus": max((pod_gpus(p) for p in pods), default=0),
                "gpus": sum(pod_gpus(p) for p in pods),
                "runningPods": len(running),
                "state": "running" if running else "pending",
            }
        )

    # Nodes with GPUs, grouped by rack (else zone); each node's GPUs go to its pods in start order.
    on_node: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for key, pods in members.items():
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name:
                on_node.setdefault(node_name, []).append((key, pod))
    racks: dict[str, dict[str, Any]] = {}
    allocated_by_class: dict[str, int] = {}
    total = 0
    for node in sorted(by_kind.get("Node", []), key=lambda n: (n.get("metadata") or {}).get("name", "")):
        meta = node.get("metadata") or {}
        capacity = _gpus((node.get("status") or {}).get("allocatable"))
        if capacity <= 0:
            continue
        total += capacity
        labels = meta.get("labels") or {}
        rack_name = next((labels[label] for label in RACK_LABELS if labels.get(label)), "all nodes")
        rack = racks.setdefault(
            rack_name, {"name": rack_name, "zone": labels.get(RACK_LABELS[1], ""), "nodes": []}
        )
        owners: list[int | None] = [None] * capacity
        held: list[dict[str, Any]] = []
        cursor = 0
        residents = sorted(
            on_node.get(meta.get("name"), []),
            key=lambda kp: (
                timestamp_or_none((kp[1].get("status") or {}).get("startTime")) or now,
                _key(kp[1]),
            ),
        )
        for gang_key, pod in residents:
            count = min(pod_gpus(pod), capacity - cursor)
            if count <= 0:
                continue
            indices = list(range(cursor, cursor + count))
            for i in indices:
                owners[i] = gang_ids[gang_key]
            cursor += count
            held.append({"pod": _key(pod), "gpus": indices})
            name = priorities[gang_key][0]
            allocated_by_class[name] = allocated_by_class.get(name, 0) + count
        rack["nodes"].append({"name": meta.get("name"), "ready": _ready(node), "gpus": owners, "pods": held})

    pending = []
    for key, row in ((k, gang_rows[i]) for k, i in gang_ids.items()):
        waiting = [p for p in members[key] if not (p.get("spec") or {}).get("nodeName")]
        if row["state"] != "pending" or not waiting:
            continue
        since = min(
            (timestamp_or_none((p.get("metadata") or {}).get("creationTimestamp")) or now) for p in waiting
        )
        conditions = list(((groups.get(key) or {}).get("status") or {}).get("conditions") or [])
        conditions += [c for p in waiting for c in (p.get("status") or {}).get("conditions") or []]
        reason = next(
            (
                c.get("message") or c.get("reason") or ""
                for c in conditions
                if c.get("type") in ("PodGroupInitiallyScheduled", "PodScheduled")
                and c.get("status") == "False"
            ),
            "",
        )
        pending.append({"gang": gang_ids[key], "waitingSeconds": max(0, int(now - since)), "reason": reason})
    pending.sort(key=lambda row: row["gang"])

    allocated = sum(allocated_by_class.values())
    return {
        "cluster": cluster,
        "time": rfc3339(now),
        "tick": 0,
        "tiers": [
            {
                "priorityClass": name,
                "priority": value,
                "disruption": "",
                "allocatedGpus": allocated_by_class.get(name, 0),
            }
            for name, value in classes
        ],
        "gangs": gang_rows,
        "racks": list(racks.values()),
        "pending": pending,
        "totals": state_totals(
            sum(len(r["nodes"]) for r in racks.values()), total, allocated, gang_rows, pending
        ),
    }
