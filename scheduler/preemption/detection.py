"""Which gangs stay unschedulable: the input of a preemption request.

A gang qualifies when it has pending pods (no node, not terminating) and either kube-scheduler said
so (PodGroup condition ``PodGroupInitiallyScheduled=False``) or its oldest pending pod has waited longer
than the grace period. Gangs whose effective preemption policy is ``Never`` (annotation
``gangweb.io/preemption-policy`` first, then the spec, then the PriorityClass) never preempt and are
left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scheduler.cluster import KubeObject, object_key
from scheduler.engine import parse_snapshot
from scheduler.engine.typed_objects import timestamp_or_none

NEVER = "Never"
SCHEDULED_CONDITION = "PodGroupInitiallyScheduled"


@dataclass(frozen=True)
class StuckGang:
    namespace: str
    name: str
    trigger: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _pending_since(pod: KubeObject) -> float | None:
    """When the pod became unschedulable (PodScheduled=False), else when it was created."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            since = timestamp_or_none(condition.get("lastTransitionTime"))
            if since is not None:
                return since
    return timestamp_or_none((pod.get("metadata") or {}).get("creationTimestamp"))


def _is_pending(pod: KubeObject) -> bool:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    return (
        not spec.get("nodeName")
        and not meta.get("deletionTimestamp")
        and phase not in ("Succeeded", "Failed")
    )


def unschedulable_gangs(
    objects: Iterable[KubeObject], *, now: float, grace_seconds: float
) -> list[StuckGang]:
    objects = list(objects)
    snapshot = parse_snapshot(objects)
    oldest_pending: dict[str, float | None] = {}
    for pod in objects:
        if pod.get("kind") != "Pod" or not _is_pending(pod):
            continue
        group = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if not group:
            continue
        key = f"{(pod.get('metadata') or {}).get('namespace')}/{group}"
        since = _pending_since(pod)
        earlier = oldest_pending.get(key)
        if key not in oldest_pending or (since is not None and (earlier is None or since < earlier)):
            oldest_pending[key] = since

    stuck = []
    for podgroup in (o for o in objects if o.get("kind") == "PodGroup"):
        key = object_key(podgroup)
        if key not in oldest_pending:
            continue
        group = snapshot.groups.get(key)
        if group is None or snapshot.preemption_policy(group) == NEVER:
            continue
        trigger = ""
        for condition in (podgroup.get("status") or {}).get("conditions") or []:
            if condition.get("type") == SCHEDULED_CONDITION and condition.get("status") == "False":
                trigger = f"{SCHEDULED_CONDITION}=False ({condition.get('reason') or 'no reason'})"
        since = oldest_pending[key]
        if not trigger and since is not None and now - since >= grace_seconds:
            trigger = f"pods pending for {int(now - since)}s (grace {int(grace_seconds)}s)"
        if trigger:
            namespace, _, name = key.partition("/")
            stuck.append(StuckGang(namespace, name, trigger))
    return sorted(stuck, key=lambda g: g.key)
