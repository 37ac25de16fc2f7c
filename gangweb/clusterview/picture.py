"""The GPU map's picture, built from any cluster's Kubernetes objects. The dashboard owns this format.

A cluster that knows which GPU index each pod holds (``scheduler.cluster.HoldsDevices``: the
simulation) hands in ``holders``; for the others each node's GPUs go to its pods in start order
(counts, owners and waiting gangs are exact, the index is not). Plain Python: no Django import.

Format (``docs/dashboard.md`` has it in full): ``domains`` (topology domains: rack label, else zone,
each a run of ``nodes``), ``nodes`` (``gpus``: one entry per device, the index of its gang in ``gangs``
or ``None`` when free; ``nominated``/``dra`` only when some device is; DRA devices' ``devices`` names and
``mig`` ``[parent GPU index, profile]`` of MIG partitions), ``gangs`` (one row per gang of the walk
``gangweb.clusterview.walk``: a PodGroup's members, or a lone GPU pod, with the dominant reason of a waiting
one worked out from this same picture; the API's rows read the same walk),
``tiers`` and ``totals``. Nodes are sorted by domain then name: an index names a node until the node
set changes.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from gangweb.clusterview.reasons import Room, dominant_reason
from gangweb.clusterview.walk import Walk, min_count, no_pause, waits, walk
from scheduler import health
from scheduler.engine.gangkey import GangKey, split_gang_key
from scheduler.engine.resources import resource_gpus
from scheduler.engine.typed_objects import timestamp_or_none

RACK_LABELS = ("topology.gangweb.io/rack", "topology.kubernetes.io/zone")
NO_CLASS = "(no priority class)"
NO_DOMAIN = "all nodes"
# Shades per colour: neighbouring gangs of one tier or team still look different.
SHADES = 6


def gang_shade(gang_key: GangKey) -> int:
    """Which shade of its colour a gang is drawn in: stable across processes and restarts."""
    return zlib.crc32(gang_key.encode()) % SHADES


def natural_key(text: str) -> list[Any]:
    """``rack-2`` before ``rack-10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: dict[str, Any]) -> str:
    """A pod's or a CompositePodGroup's own ``NAMESPACE/NAME`` (gangs are keyed by the walk)."""
    return f"{_meta(obj).get('namespace')}/{_meta(obj).get('name')}"


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _dra_devices(slices: list[dict[str, Any]]) -> dict[str, list[tuple[str, list[Any] | None]]]:
    """DRA devices per node from ResourceSlices (``spec.nodeName``, ``spec.devices``), in their order: each
    its name and, for a MIG partition (the NVIDIA driver's ``type: mig``), ``[parent GPU index, profile]``."""
    found: dict[str, list[tuple[str, list[Any] | None]]] = {}
    for item in slices:
        spec = item.get("spec") or {}
        if not spec.get("nodeName"):
            continue
        for device in spec.get("devices") or []:
            attributes = {k.rpartition("/")[2]: v for k, v in (device.get("attributes") or {}).items()}
            kind = (attributes.get("type") or {}).get("string")
            mig = None
            if kind == "mig":
                parent = (attributes.get("parentIndex") or {}).get("int")
                mig = [parent, (attributes.get("profile") or {}).get("string") or "MIG"]
            found.setdefault(spec["nodeName"], []).append((str(device.get("name", "")), mig))
    return found


class _Gangs:
    """The walk's gangs (``gangweb.clusterview.walk``) with their priority, tier and index in ``gangs``."""

    def __init__(self, walked: Walk) -> None:
        self.groups, self.members, self.gpus = walked.groups, walked.members, walked.gpus
        classes = {
            _meta(pc).get("name"): int(pc.get("value") or 0) for pc in walked.by_kind.get("PriorityClass", [])
        }
        self.priority: dict[GangKey, tuple[str, int]] = {}
        for gang_key, pods in self.members.items():
            spec = (self.groups.get(gang_key) or {}).get("spec") or (pods[0].get("spec") or {})
            name = spec.get("priorityClassName") or NO_CLASS
            value = spec.get("priority")
            self.priority[gang_key] = (name, int(value if value is not None else classes.get(name, 0)))
        self.classes = sorted(set(self.priority.values()), key=lambda p: (-p[1], p[0]))
        self.order = sorted(self.members, key=lambda k: (-self.priority[k][1], k))
        self.index = {gang_key: i for i, gang_key in enumerate(self.order)}


def build_picture(
    objects: Iterable[dict[str, Any]] | Walk,
    *,
    now: float,
    cluster: str,
    holders: dict[str, list[str | None]] | None = None,
    pause: Callable[[], None] = no_pause,
) -> dict[str, Any]:
    """The picture of ``objects``, or of the walk over them a caller made already (``reading.take``: the
    API's rows are built from that same walk). ``pause`` is called in the loops
    (``gangweb.clusterview.reading.Pace``: a build beside requests lets them run)."""
    walked = objects if isinstance(objects, Walk) else walk(objects, pause)
    by_kind = walked.by_kind
    gangs = _Gangs(walked)
    pod_gang, on_node, nominated_on = walked.gang_of, walked.on_node, walked.nominated_on
    dra = _dra_devices(by_kind.get("ResourceSlice", []))

    nodes_in: dict[str, list[dict[str, Any]]] = {}
    zone_of: dict[str, str] = {}
    for node in by_kind.get("Node", []):
        name = _meta(node).get("name", "")
        if resource_gpus((node.get("status") or {}).get("allocatable")) + len(dra.get(name, [])) <= 0:
            continue
        labels = _meta(node).get("labels") or {}
        domain = next((labels[label] for label in RACK_LABELS if labels.get(label)), NO_DOMAIN)
        nodes_in.setdefault(domain, []).append(node)
        zone_of.setdefault(domain, labels.get(RACK_LABELS[1], ""))

    domains: list[dict[str, Any]] = []
    node_rows: list[dict[str, Any]] = []
    for domain in sorted(nodes_in, key=lambda d: (d == NO_DOMAIN, natural_key(d))):
        members = sorted(nodes_in[domain], key=lambda n: natural_key(_meta(n).get("name", "")))
        domains.append(
            {"name": domain, "zone": zone_of[domain], "first": len(node_rows), "count": len(members)}
        )
        for node in members:
            pause()
            row = _node_row(node, len(domains) - 1, gangs, on_node, nominated_on, holders, pod_gang, dra, now)
            node_rows.append(row)

    ready = {_meta(n).get("name"): _ready(n) for n in by_kind.get("Node", [])}
    is_ready: Callable[[str], bool] = lambda n: ready.get(n, False)  # noqa: E731
    composites = {_key(c): c for c in by_kind.get("CompositePodGroup", [])}
    short = health.short_composites(gangs.groups, composites, gangs.members, is_ready) if composites else {}
    gang_rows = []
    for gang_key in gangs.order:
        pause()
        row = _gang_row(gang_key, gangs, walked.placed.get(gang_key, 0), now)
        judged = health.judge(
            gangs.groups.get(gang_key), gangs.members[gang_key], is_ready, lambda pod: gangs.gpus[id(pod)]
        )
        if gang_key in short:
            judged = health.composite_short(
                judged, gangs.groups[gang_key], gangs.members[gang_key], is_ready, short[gang_key]
            )
        if judged is not None and judged.broken:
            row["broken"] = judged.as_json()
        gang_rows.append(row)
    picture = {
        "cluster": cluster,
        "time": now,
        "domains": domains,
        "nodes": node_rows,
        "gangs": gang_rows,
        "tiers": [{"priorityClass": name, "priority": value} for name, value in gangs.classes],
    }
    picture["totals"] = totals(picture)
    picture["tiers"] = tiers(picture)
    room = Room(picture)
    for row in gang_rows:
        if row.get("broken"):
            row["reason"] = broken_reason(row["broken"])
        elif row["state"] != "running":
            pause()
            row["reason"] = dominant_reason(row, picture, room)
    return picture


def broken_reason(broken: dict[str, Any]) -> str:
    """The sentence of a broken gang (``scheduler.health.GangHealth.as_json``)."""
    causes = ", ".join(c.replace("-", " ") for c in broken["causes"]) or "members missing"
    restarting = "; a member is being restarted" if broken.get("restarting") else ""
    composite = (
        f"; CompositePodGroup {broken['composite']} runs fewer child groups than its minGroupCount"
        if broken.get("composite")
        else ""
    )
    return (
        f"broken: {broken['running']} of {broken['minCount']} members run ({causes}) "
        f"while it holds {broken['heldGpus']} GPUs{composite}{restarting}"
    )


def _node_row(node, domain, gangs, on_node, nominated_on, holders, pod_gang, dra, now) -> dict[str, Any]:
    name = _meta(node).get("name", "")
    capacity = resource_gpus((node.get("status") or {}).get("allocatable"))
    devices = dra.get(name, [])
    extra = len(devices)
    owners: list[int | None] = [None] * (capacity + extra)
    known = (holders or {}).get(name)
    if known is not None:
        for i, pod_key in enumerate(known[: len(owners)]):
            gang_key = pod_gang.get(pod_key) if pod_key else None
            owners[i] = gangs.index[gang_key] if gang_key is not None else None
    else:
        cursor = 0
        residents = sorted(
            on_node.get(name, []),
            key=lambda p: (timestamp_or_none((p.get("status") or {}).get("startTime")) or now, _key(p)),
        )
        for pod in residents:
            count = min(gangs.gpus[id(pod)], capacity - cursor)
            for i in range(cursor, cursor + max(count, 0)):
                owners[i] = gangs.index[pod_gang[_key(pod)]]
            cursor += max(count, 0)
    row: dict[str, Any] = {
        "name": name,
        "domain": domain,
        "ready": _ready(node),
        "cordoned": bool((node.get("spec") or {}).get("unschedulable")),
        "gpus": owners,
    }
    waiting = nominated_on.get(name, [])
    if waiting:
        nominated: list[int | None] = [None] * len(owners)
        free = [i for i, owner in enumerate(owners) if owner is None]
        for pod in waiting:
            for i in free[: gangs.gpus[id(pod)]]:
                nominated[i] = gangs.index[pod_gang[_key(pod)]]
            free = free[gangs.gpus[id(pod)] :]
        row["nominated"] = nominated
    if extra:
        row["dra"] = [False] * capacity + [True] * extra
        row["devices"] = [None] * capacity + [device for device, _ in devices]
        if any(mig for _, mig in devices):
            row["mig"] = [None] * capacity + [mig for _, mig in devices]
    return row


def _gang_row(gang_key: GangKey, gangs: _Gangs, placed: int, now: float) -> dict[str, Any]:
    pods = gangs.members[gang_key]
    group = gangs.groups.get(gang_key) or {}
    spec = group.get("spec") or {}
    namespace, name = split_gang_key(gang_key)
    least = min_count(group or None, pods)
    waiting = [p for p in pods if waits(p)]
    since = min(
        (timestamp_or_none(_meta(p).get("creationTimestamp")) or now for p in waiting),
        default=now,
    )
    tier = gangs.classes.index(gangs.priority[gang_key])
    # "partial": an elastic gang running with at least minCount pods while the rest wait.
    state = "running" if not waiting else ("partial" if placed and placed >= least else "waiting")
    return {
        "key": gang_key,
        "namespace": namespace,
        "name": name,
        "priorityClass": gangs.priority[gang_key][0],
        "priority": gangs.priority[gang_key][1],
        "tier": tier,
        "shade": gang_shade(gang_key),
        "disruption": next(iter(spec.get("disruptionMode") or {"single": {}})),
        "topology": bool((spec.get("schedulingConstraints") or {}).get("topology")),
        "pods": len(pods),
        "placed": placed,
        "minCount": least,
        "podGpus": max((gangs.gpus[id(p)] for p in pods), default=0),
        "gpus": sum(gangs.gpus[id(p)] for p in pods),
        "state": state,
        "waitingSeconds": max(0, int(now - since)) if waiting else 0,
        "podGroup": bool(group),
    }


def totals(picture: dict[str, Any]) -> dict[str, int]:
    """Headline figures of a picture: what the map shows, counted from the map."""
    gpus = allocated = cordoned = nominated = free = partitions = 0
    for node in picture["nodes"]:
        unusable = node["cordoned"] or not node["ready"]
        mig = node.get("mig") or ()
        for i, owner in enumerate(node["gpus"]):
            if i < len(mig) and mig[i] is not None:
                partitions += 1  # a MIG partition is drawn, not counted as a GPU
                continue
            gpus += 1
            if owner is not None:
                allocated += 1
            elif unusable:
                cordoned += 1
            else:
                free += 1
                if (node.get("nominated") or [None] * (i + 1))[i] is not None:
                    nominated += 1
    gangs = picture["gangs"]
    waiting = [g for g in gangs if g["state"] == "waiting"]
    out = {
        "nodes": len(picture["nodes"]),
        "gpus": gpus,
        "allocatedGpus": allocated,
        "freeGpus": free,
        "cordonedGpus": cordoned,
        "nominatedGpus": nominated,
        "runningGangs": sum(1 for g in gangs if g["state"] in ("running", "partial") and not g.get("broken")),
        "brokenGangs": sum(1 for g in gangs if g.get("broken")),
        "brokenGpus": sum(g["broken"]["heldGpus"] for g in gangs if g.get("broken")),
        "waitingGangs": len(waiting),
        "waitingGpus": sum((g["minCount"] - g["placed"]) * g["podGpus"] for g in waiting),
    }
    if partitions:
        out["migPartitions"] = partitions  # MIG partitions drawn, not counted as GPUs
    return out


def tiers(picture: dict[str, Any]) -> list[dict[str, Any]]:
    """GPUs allocated per priority class, counted from the map's squares."""
    held: dict[str, int] = {}
    for node in picture["nodes"]:
        for owner in node["gpus"]:
            if owner is not None:
                name = picture["gangs"][owner].get("priorityClass", "")
                held[name] = held.get(name, 0) + 1
    return [{**t, "allocatedGpus": held.get(t["priorityClass"], 0)} for t in picture["tiers"]]
