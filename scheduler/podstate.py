"""What a raw Pod object says about itself: live, pending, bound, the PodGroup it names.

One definition for every reader of raw pods (detection, the execution's re-check, the PodGroup ensurer,
the dashboard picture); the engine's typed ``Pod`` (``scheduler/engine/typed_objects.py``) applies the
same rules to the objects it parses. Plain Python over API-shaped dicts, no imports beyond the stdlib.
"""

from __future__ import annotations

from typing import Any

from scheduler.engine.gangkey import GangKey, gang_key_of
from scheduler.kinds import is_native

Pod = dict[str, Any]
FINISHED_PHASES = ("Succeeded", "Failed")


def group_name(pod: Pod) -> str | None:
    """The PodGroup the pod names (``spec.schedulingGroup.podGroupName``), or None."""
    return ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or None


def gang_key_of_pod(pod: Pod) -> GangKey | None:
    """The gang key of the PodGroup the pod names, or None."""
    name = group_name(pod)
    return gang_key_of(str((pod.get("metadata") or {}).get("namespace")), name) if name else None


def is_finished(pod: Pod) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED_PHASES


def is_terminating(pod: Pod) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_live(pod: Pod) -> bool:
    """May still be scheduled or run: not terminating, not finished."""
    return not is_terminating(pod) and not is_finished(pod)


def bound_by_key(objects: Any) -> dict[str, Pod]:
    """The live pods bound to a node among ``objects``, by ``namespace/name`` (other kinds skipped): the
    pods that can leave GPUs idle, as a cluster reading (``gangweb.clusterview.reading``) indexes them
    while it builds its picture."""
    pods = {}
    for obj in objects:
        if obj.get("kind") == "Pod" and is_bound(obj) and is_live(obj):
            meta = obj.get("metadata") or {}
            pods[f"{meta.get('namespace')}/{meta.get('name')}"] = obj
    return pods


def node_name(pod: Pod) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def is_bound(pod: Pod) -> bool:
    """Has a node (running, or bound and starting)."""
    return bool(node_name(pod))


def is_pending(pod: Pod) -> bool:
    """Live and without a node: waiting for kube-scheduler."""
    return is_live(pod) and not is_bound(pod)


def pending_of(objects: Any, namespace: str, podgroup: str) -> list[Pod]:
    """The pending pods of the PodGroup ``namespace/podgroup`` among ``objects`` (other kinds skipped)."""
    return [
        o
        for o in objects
        if is_native(o, "Pod")
        and (o.get("metadata") or {}).get("namespace") == namespace
        and group_name(o) == podgroup
        and is_pending(o)
    ]
