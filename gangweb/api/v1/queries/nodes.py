"""One node as its page shows it: labels, taints, conditions, the pods on it, its GPUs and DRA devices.

Read from the process's newest reading (the objects and the GPU map's picture of them, the one the live
map's last delta came from; ``gangweb/clusterview/rows.py``'s view, which may lag it, where there is none yet), so a
node's squares here are the map's squares, and a page that reads the node on a delta naming it reads
what the delta said. Nodes are the cluster's,
not a tenant's: every reader sees the node itself, but the pods of namespaces the reader does not see
only as counts (pods, GPUs), and their GPUs as "in use, other namespace".
"""

from __future__ import annotations

from typing import Any

from gangweb.access.scope import Scope
from gangweb.clusterview import reading
from gangweb.clusterview.picture import RACK_LABELS
from gangweb.clusterview.rows import cluster_view
from scheduler.engine.resources import pod_gpus
from scheduler.kinds import native_kind


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _attribute(value: Any) -> Any:
    """A DRA attribute's value (``{"string": "mig"}``, ``{"int": 3}``, ...) as itself."""
    if isinstance(value, dict) and len(value) == 1:
        return next(iter(value.values()))
    return value


def node(scope: Scope, name: str) -> dict[str, Any] | None:
    """The node ``name`` cut to ``scope``, or None when the cluster has no such node."""
    view = cluster_view()
    taken = reading.latest(view.reading.cluster) or view.reading
    found = None
    pods: list[dict[str, Any]] = []
    slices: list[dict[str, Any]] = []
    for obj in taken.objects:
        kind = native_kind(obj)
        if kind == "Node" and _meta(obj).get("name") == name:
            found = obj
        elif kind == "Pod" and (obj.get("spec") or {}).get("nodeName") == name:
            pods.append(obj)
        elif kind == "ResourceSlice" and (obj.get("spec") or {}).get("nodeName") == name:
            slices.append(obj)
    if found is None:
        return None
    meta, spec, status = _meta(found), found.get("spec") or {}, found.get("status") or {}
    labels = meta.get("labels") or {}

    shown: list[dict[str, Any]] = []
    hidden = {"pods": 0, "gpus": 0}
    for pod in sorted(pods, key=lambda p: (_meta(p).get("namespace") or "", _meta(p).get("name") or "")):
        pm, ps, pst = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
        if pst.get("phase") in ("Succeeded", "Failed"):
            continue
        namespace = pm.get("namespace") or ""
        gpus = taken.gpus.get(id(pod), pod_gpus(pod))
        if not scope.sees(namespace):
            hidden["pods"] += 1
            hidden["gpus"] += gpus
            continue
        shown.append(
            {
                "namespace": namespace,
                "name": pm.get("name"),
                "podGroup": (ps.get("schedulingGroup") or {}).get("podGroupName"),
                "phase": pst.get("phase") or "Pending",
                "priorityClass": ps.get("priorityClassName"),
                "priority": ps.get("priority") or 0,
                "gpus": gpus,
                "startedAt": pst.get("startTime"),
                "deleting": bool(pm.get("deletionTimestamp")),
            }
        )

    return {
        "name": name,
        "labels": labels,
        "taints": [
            {k: t[k] for k in ("key", "value", "effect") if t.get(k) is not None}
            for t in spec.get("taints") or []
        ],
        "conditions": [
            {
                k: c[k]
                for k in ("type", "status", "reason", "message", "lastTransitionTime")
                if c.get(k) is not None
            }
            for c in status.get("conditions") or []
        ],
        "ready": any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        ),
        "cordoned": bool(spec.get("unschedulable")),
        "domain": _domain(taken.picture, name),
        "mapIndex": next((i for i, row in enumerate(taken.picture["nodes"]) if row["name"] == name), None),
        "zone": labels.get(RACK_LABELS[1]),
        "allocatable": dict(status.get("allocatable") or {}),
        "pods": shown,
        "otherNamespaces": hidden,
        "devices": _devices(taken.picture, name, scope),
        "resourceSlices": [_slice(s) for s in sorted(slices, key=lambda s: _meta(s).get("name") or "")],
    }


def _domain(picture: dict[str, Any], name: str) -> str | None:
    """The topology domain the map groups the node in (its rack, else its zone), or None off the map."""
    for domain in picture["domains"]:
        names = picture["nodes"][domain["first"] : domain["first"] + domain["count"]]
        if any(n["name"] == name for n in names):
            return domain["name"]
    return None


def _devices(picture: dict[str, Any], name: str, scope: Scope) -> list[dict[str, Any]]:
    """The node's squares on the map, in its order: who holds each (a gang of another namespace nameless)."""
    row = next((n for n in picture["nodes"] if n["name"] == name), None)
    if row is None:
        return []
    gangs = picture["gangs"]

    def holder(index: int | None) -> dict[str, Any] | None:
        if index is None:
            return None
        gang = gangs[index]
        if not scope.sees(gang["namespace"]):
            return {"namespace": None, "name": None, "otherNamespace": True}
        return {"namespace": gang["namespace"], "name": gang["name"], "otherNamespace": False}

    out = []
    for i, owner in enumerate(row["gpus"]):
        nominated = holder((row.get("nominated") or [None] * len(row["gpus"]))[i])
        out.append(
            {
                "index": i,
                "name": (row.get("devices") or [None] * len(row["gpus"]))[i],
                "dra": bool((row.get("dra") or [False] * len(row["gpus"]))[i]),
                "mig": (row.get("mig") or [None] * len(row["gpus"]))[i],
                "heldBy": holder(owner),
                "nominatedFor": None if nominated is None or nominated["otherNamespace"] else nominated,
            }
        )
    return out


def _slice(item: dict[str, Any]) -> dict[str, Any]:
    spec = item.get("spec") or {}
    return {
        "name": _meta(item).get("name"),
        "driver": spec.get("driver"),
        "pool": (spec.get("pool") or {}).get("name"),
        "devices": [
            {
                "name": d.get("name"),
                "attributes": {k: _attribute(v) for k, v in (d.get("attributes") or {}).items()},
            }
            for d in spec.get("devices") or []
        ],
    }
