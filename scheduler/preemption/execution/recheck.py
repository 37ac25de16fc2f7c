"""Is a stored plan still right? Checked against a fresh snapshot just before anything is evicted.

A plan is only as good as the snapshot it was made from. Before the first eviction we ask again:
the preemptor still has pending pods, every victim pod is still the same pod (UID) on the same node,
not already terminating, and still of strictly lower priority than the preemptor; and, with the
victims removed, the engine places the gang without evicting anyone else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scheduler import podstate
from scheduler.cluster import KubeObject, object_key
from scheduler.engine import parse_snapshot
from scheduler.engine import plan as engine_plan

# Any timestamp does: the engine only asks whether a pod is terminating.
EVICTED_AT = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    # True when the gang no longer needs preemption at all (placed meanwhile, or deleted).
    moot: bool = False


def pending_pods(objects: Iterable[KubeObject], namespace: str, podgroup: str) -> list[KubeObject]:
    """Pods of the group without a node that are not terminating or finished."""
    return podstate.pending_of(objects, namespace, podgroup)


def as_if_evicted(objects: list[KubeObject], victim_keys: set[str]) -> list[KubeObject]:
    """The objects with the victims terminating: they hold nothing, but the engine still knows them
    (and their priorities), so one parse serves both checks."""
    out = []
    for obj in objects:
        if obj.get("kind") == "Pod" and object_key(obj) in victim_keys:
            obj = {**obj, "metadata": {**(obj.get("metadata") or {}), "deletionTimestamp": EVICTED_AT}}
        out.append(obj)
    return out


def recheck(objects: list[KubeObject], stored_plan: Any, evictions: list[Any]) -> Verdict:
    request = stored_plan.request
    pods = {object_key(o): o for o in objects if o.get("kind") == "Pod"}
    groups = {object_key(o) for o in objects if o.get("kind") == "PodGroup"}
    if request.podgroup not in groups:
        return Verdict(False, f"PodGroup {request.podgroup} no longer exists", moot=True)
    if not pending_pods(objects, request.namespace, request.name):
        return Verdict(
            False, f"{request.podgroup} has no pending pods any more (placed without preemption)", moot=True
        )

    for eviction in evictions:
        current = pods.get(eviction.pod)
        if current is None:
            return Verdict(False, f"victim {eviction.pod} is gone since the plan was made")
        meta = current.get("metadata") or {}
        if eviction.pod_uid and meta.get("uid") and meta.get("uid") != eviction.pod_uid:
            return Verdict(False, f"victim {eviction.pod} was replaced by a new pod (UID changed)")
        if meta.get("deletionTimestamp"):
            return Verdict(False, f"victim {eviction.pod} is already terminating")
        node = (current.get("spec") or {}).get("nodeName") or ""
        if eviction.node and node != eviction.node:
            return Verdict(False, f"victim {eviction.pod} moved from {eviction.node} to {node or 'no node'}")

    victim_keys = {e.pod for e in evictions}
    snapshot = parse_snapshot(as_if_evicted(objects, victim_keys))
    preemptor_priority = snapshot.effective_group_priority(snapshot.groups[request.podgroup])
    for key in sorted(victim_keys):
        priority = snapshot.pod_priority[snapshot.pod_index[key]]
        if priority >= preemptor_priority:
            return Verdict(
                False,
                f"victim {key} now has priority {priority}, not lower than the "
                f"preemptor's {preemptor_priority}",
            )

    after = engine_plan(snapshot, request.podgroup, policy=stored_plan.policy)
    if not after.feasible:
        return Verdict(False, f"the gang would not fit even after the evictions: {after.reason}")
    extra = sorted(after.to_dict().get("evictions") or [])
    if extra:
        return Verdict(
            False, f"after the planned evictions the gang would still need {len(extra)} more: {extra[:5]}"
        )
    return Verdict(True, "plan still holds on a fresh snapshot")
