"""The live cluster as rows: nodes with who holds their GPUs, PodGroups with their members.

The rows are built from the process's shared reading of the cluster (``gangweb.clusterview.reading``: the
objects and the GPU map's picture of them, which the dashboard's ticker takes too), once per reading,
into a ``ClusterView``. A view is served while its reading is younger than
``GANGWEB_API_CLUSTER_CACHE_SECONDS`` and no newer reading exists (a list endpoint paged through 5,000
PodGroups must not relist the cluster for every page); then one background thread builds the next view,
from the ticker's newer reading or from one it takes itself, paced so the requests beside it keep their
pace. PodGroups are read with the engine's own typed reader (``scheduler.engine.typed_objects.Group``);
members, GPUs (``scheduler.engine.resources.pod_gpus``), who waits and ``minCount`` come from the walk the
reading's picture was built from (``gangweb.clusterview.walk``), so the API, the page and the planner agree. A waiting gang's reason is the GPU map's
(``gangweb.clusterview.reasons``, in the picture of this same reading), not the words of its Unschedulable
condition, which kube-scheduler wrote at another moment.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from rest_framework.exceptions import APIException

from gangweb.access.scope import Scope
from gangweb.clusterview import reading
from gangweb.clusterview.picture import broken_reason
from gangweb.clusterview.walk import min_count, no_pause, waits
from scheduler.engine.gangkey import GangKey, gang_key_of, split_gang_key
from scheduler.engine.resources import resource_gpus
from scheduler.engine.typed_objects import Group, PriorityClass, timestamp_or_none
from scheduler.kinds import is_native, native_kind
from scheduler.preemption import detection
from scheduler.preemption.execution.notice import DEADLINE_ANNOTATION
from scheduler.preemption.runtime import get_cluster

logger = logging.getLogger(__name__)

PREEMPT, NEVER = "PreemptLowerPriority", "Never"


class ClusterUnavailable(APIException):
    status_code = 503
    default_detail = "cannot read the cluster"


@dataclass
class ClusterView:
    reading: reading.Reading
    nodes: list[dict[str, Any]] = field(default_factory=list)
    groups: dict[GangKey, dict[str, Any]] = field(default_factory=dict)  # gang key -> its PodGroup's row
    members: dict[GangKey, list[dict[str, Any]]] = field(default_factory=dict)
    conditions: dict[GangKey, list[dict[str, Any]]] = field(default_factory=dict)
    _stuck: list[GangKey] | None = None

    @property
    def at(self) -> float:
        return self.reading.time

    def stuck(self, pause: Callable[[], None] = no_pause) -> list[GangKey]:
        """The gangs the next detection pass opens a request for (``scheduler.preemption.detection``), in
        its order (by key); worked out once per reading (every PodGroup parsed: the background refresh
        does it). Judged a namespace at a time, with ``pause`` between them: a gang is judged by its
        PodGroup, its pods and the PriorityClasses alone (``detection.gang_objects``)."""
        if self._stuck is None:
            grace = settings.GANGWEB_PENDING_GRACE_SECONDS
            found: list[GangKey] = []
            for chunk in _by_namespace(self.reading.objects):
                pause()
                found += (
                    g.key for g in detection.unschedulable_gangs(chunk, now=self.at, grace_seconds=grace)
                )
            self._stuck = sorted(found)
        return self._stuck


def _by_namespace(objects: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The Pods and PodGroups of each namespace, each list with every PriorityClass."""
    classes = [o for o in objects if is_native(o, "PriorityClass")]
    spaces: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        if native_kind(obj) in ("Pod", "PodGroup"):
            spaces.setdefault((obj.get("metadata") or {}).get("namespace") or "", []).append(obj)
    return [members + classes for members in spaces.values()]


_view_lock = threading.Lock()
_view: ClusterView | None = None
_refreshing = False


def cluster_view() -> ClusterView:
    """The cluster as rows. A view of a reading younger than ``GANGWEB_API_CLUSTER_CACHE_SECONDS`` is
    served as it is, as long as no newer reading exists; otherwise it is still served while one
    background thread builds the next (so no request waits for a relist of 5,000 PodGroups). The first
    view, and every one with the setting at 0, is built on the caller's thread (at 0, from a new reading)."""
    global _refreshing
    ttl = float(getattr(settings, "GANGWEB_API_CLUSTER_CACHE_SECONDS", 5))
    try:
        cluster = get_cluster()
    except Exception as exc:
        raise ClusterUnavailable(f"cannot reach the cluster: {exc}") from exc
    if ttl <= 0:
        return _build(cluster, max_age=0)
    with _view_lock:
        view = _view if _view is not None and _view.reading.cluster is cluster else None
        if view is not None and not _refreshing:
            newest = reading.latest(cluster)
            if view.reading is not newest or view.reading.age() >= ttl:
                _refreshing = True
                threading.Thread(
                    target=_refresh, args=(cluster, ttl), name="gangweb-api-cluster", daemon=True
                ).start()
    if view is not None:
        return view
    return _build(cluster, max_age=ttl)


def _build(cluster, *, max_age: float, paced: bool = False) -> ClusterView:
    global _view
    try:
        taken = reading.take(cluster, max_age=max_age, paced=paced)
    except Exception as exc:  # an unreachable API server is the server's problem, said in one line
        raise ClusterUnavailable(f"cannot read the cluster: {exc}") from exc
    pause = reading.Pace() if paced else no_pause
    view = build_view(taken, pause=pause)
    if paced:  # served only once the queue's snapshot parse is done too
        view.stuck(pause)
    with _view_lock:
        if _view is None or _view.reading.started <= view.reading.started:
            _view = view
    return view


def _refresh(cluster, ttl: float) -> None:
    global _refreshing
    try:
        _build(cluster, max_age=ttl, paced=True)
    except ClusterUnavailable:
        logger.warning("cannot read the cluster for the API", exc_info=True)
        forget()  # the next request reads it on its own thread and says why
    except Exception:
        logger.exception("cannot build the API's cluster rows")
    finally:
        _refreshing = False


def forget() -> None:
    """Drop the API's view and the process's reading (tests; a cluster changed behind our back)."""
    global _view
    with _view_lock:
        _view = None
    reading.forget()


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def build_view(taken: reading.Reading, *, pause: Callable[[], None] = no_pause) -> ClusterView:
    """The rows of one reading, from the walk its picture was built from (``gangweb.clusterview.walk``: the
    same members, GPUs and waiting pods), a waiting gang's reason the picture's. ``pause`` as in
    ``picture.build_picture``."""
    view, now, walked = ClusterView(reading=taken), taken.time, taken.walked
    classes: dict[str, PriorityClass] = {}
    for raw in walked.by_kind.get("PriorityClass", []):
        try:
            pc = PriorityClass(raw)
        except ValueError:
            continue
        classes[pc.name] = pc

    held: dict[str, dict[tuple[str, str], int]] = {}  # node -> (namespace, gang name) -> GPUs
    for gang_key, pods in walked.members.items():
        pause()
        namespace, gang = split_gang_key(gang_key)
        rows = view.members.setdefault(gang_key, [])
        for pod in pods:
            meta, spec, status = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
            gpus, node = walked.gpus[id(pod)], spec.get("nodeName")
            if node and gpus:  # a lone GPU pod's under its own name, as the map names its gang
                on = held.setdefault(node, {})
                on[(namespace, gang)] = on.get((namespace, gang), 0) + gpus
            if not (spec.get("schedulingGroup") or {}).get("podGroupName"):  # a lone GPU pod: in no PodGroup
                continue
            rows.append(
                {
                    "namespace": meta.get("namespace") or "",
                    "name": meta.get("name"),
                    "node": node or None,
                    "phase": status.get("phase") or "Pending",
                    "gpus": gpus,
                    "deleting": bool(meta.get("deletionTimestamp")),
                    "createdAt": meta.get("creationTimestamp"),
                    "waits": waits(pod),
                }
            )
            view.conditions.setdefault(gang_key, []).extend(
                c for c in status.get("conditions") or [] if c.get("status") == "False"
            )
        if not rows:
            del view.members[gang_key]

    # The map's reasons, from the picture of this same reading (one way: the page's and the API's).
    mapped = {g["key"]: g.get("reason") for g in taken.picture["gangs"]}
    broken = {g["key"]: g["broken"] for g in taken.picture["gangs"] if g.get("broken")}
    for raw in walked.by_kind.get("PodGroup", []):
        pause()
        row = _group_row(raw, classes, view, now, mapped, broken)
        view.groups[row["podGroup"]] = row

    for node in sorted(walked.by_kind.get("Node", []), key=lambda n: _meta(n).get("name", "")):
        pause()
        row = _node_row(node, held.get(_meta(node).get("name"), {}))
        if row["gpus"] or row["allocatedGpus"]:
            view.nodes.append(row)
    return view


def _group_row(
    raw: dict[str, Any],
    classes: dict[str, PriorityClass],
    view: ClusterView,
    now: float,
    mapped: dict[GangKey, str | None],
    broken: dict[GangKey, dict[str, Any]],
) -> dict:
    meta = _meta(raw)
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    gang_key = gang_key_of(namespace, name)
    members = view.members.get(gang_key, [])
    placed = [m for m in members if m["node"]]
    waiting = [m for m in members if m["waits"]]
    status_conditions = list((raw.get("status") or {}).get("conditions") or [])
    view.conditions[gang_key] = status_conditions + view.conditions.get(gang_key, [])
    row: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "podGroup": gang_key,
        "priorityClass": None,
        "priority": 0,
        "disruptionMode": "single",
        "preemptionPolicy": PREEMPT,
        "minCount": 1,
        "pods": len(members),
        "placedPods": len(placed),
        "pendingPods": len(waiting),
        "gpus": sum(m["gpus"] for m in members),
        "placedGpus": sum(m["gpus"] for m in placed),
        "topologyKey": None,
        "createdAt": meta.get("creationTimestamp"),
        "waitingSince": None,
        "waitingSeconds": 0,
        "invalid": None,
    }
    try:
        group = Group(raw, "PodGroup")
    except ValueError as exc:
        row["invalid"] = str(exc)
    else:
        pc = classes.get(group.priority_class or "")
        row["priorityClass"] = group.priority_class
        row["priority"] = group.priority if group.priority is not None else (pc.value if pc else 0)
        row["disruptionMode"] = group.disruption
        row["preemptionPolicy"] = group.preemption_policy or (
            pc.preemption_policy if pc and pc.preemption_policy else PREEMPT
        )
        row["minCount"] = min_count(raw, members)  # the map's rule; the typed reader's too, for a valid one
        row["topologyKey"] = group.topology_key
    if waiting:
        since = min(timestamp_or_none(m["createdAt"]) or now for m in waiting)
        row["waitingSince"] = since
        row["waitingSeconds"] = max(0, int(now - since))
    # The gang's health as the map judged it (scheduler.health): null unless it is broken now.
    row["broken"] = broken.get(gang_key)
    row["noticeDeadline"] = (meta.get("annotations") or {}).get(DEADLINE_ANNOTATION)
    row["state"] = _state(row)
    row["reason"] = _reason(row, mapped.get(gang_key))
    return row


def _state(row: dict[str, Any]) -> str:
    if row["invalid"]:
        return "invalid"
    if row["broken"]:
        return "broken"
    if not row["pods"]:
        return "empty"
    if row["placedPods"] >= row["minCount"]:
        return "running" if not row["pendingPods"] else "running-partly"
    return "pending" if not row["placedPods"] else "short"


def _reason(row: dict[str, Any], mapped: str | None) -> str:
    """The one sentence a person reads first: why this gang is where it is. A waiting gang's is the
    map's dominant reason (``gangweb.clusterview.reasons.dominant_reason``)."""
    state = row["state"]
    if state == "invalid":
        return f"the PodGroup cannot be read: {row['invalid']}"
    if state == "empty":
        return "no pods yet"
    if state == "broken":
        return broken_reason(row["broken"])
    if state == "running":
        return f"running: {row['placedPods']} pods on {row['placedGpus']} GPUs"
    # No "it never preempts": an enforced gang's class may say Never while gangweb preempts for it (design.md).
    return mapped or f"waiting for {max(row['minCount'] - row['placedPods'], row['pendingPods'])} more pods"


def _node_row(node: dict[str, Any], by_gang: dict[tuple[str, str], int]) -> dict[str, Any]:
    """The node with the GPUs its placed members hold, by gang."""
    meta, spec = _meta(node), node.get("spec") or {}
    total = resource_gpus((node.get("status") or {}).get("allocatable"))
    conditions = (node.get("status") or {}).get("conditions") or []
    allocated = sum(by_gang.values())
    return {
        "name": meta.get("name"),
        "labels": meta.get("labels") or {},
        "ready": any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        "cordoned": bool(spec.get("unschedulable")),
        "gpus": total,
        "allocatedGpus": allocated,
        "freeGpus": max(0, total - allocated),
        "allocations": [
            {"namespace": ns, "name": gang, "gpus": gpus, "otherNamespace": False}
            for (ns, gang), gpus in sorted(by_gang.items())
        ],
    }


# --- scoped reads --------------------------------------------------------------------------------


def nodes(scope: Scope) -> list[dict[str, Any]]:
    """Every node (nodes are the cluster's, not a tenant's); GPUs held in a namespace the reader does
    not see are counted under "in use, other namespace", without names."""
    rows = cluster_view().nodes
    if scope.all_namespaces:
        return rows
    return [{**row, "allocations": _cut_allocations(row["allocations"], scope)} for row in rows]


def _cut_allocations(allocations: list[dict[str, Any]], scope: Scope) -> list[dict[str, Any]]:
    seen = [a for a in allocations if scope.sees(a["namespace"])]
    hidden = sum(a["gpus"] for a in allocations if not scope.sees(a["namespace"]))
    if hidden:
        seen.append({"namespace": None, "name": None, "gpus": hidden, "otherNamespace": True})
    return seen


def podgroups(scope: Scope) -> list[dict[str, Any]]:
    """The PodGroups the reader sees, by namespace then name."""
    view = cluster_view()
    return [
        view.groups[gang_key]
        for gang_key in sorted(view.groups)
        if scope.sees(view.groups[gang_key]["namespace"])
    ]


def podgroup(scope: Scope, namespace: str, name: str) -> tuple[dict[str, Any], ClusterView] | None:
    view = cluster_view()
    row = view.groups.get(gang_key_of(namespace, name))
    if row is None or not scope.sees(namespace):
        return None
    return row, view
