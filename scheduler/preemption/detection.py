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

from scheduler import podstate
from scheduler.cluster import KubeObject, WatchCache, object_key
from scheduler.engine.errors import SnapshotError, object_label
from scheduler.engine.gangkey import GangKey, gang_key_of
from scheduler.engine.typed_objects import PREEMPT, Group, PriorityClass, timestamp_or_none
from scheduler.kinds import is_native, native_kind

NEVER = "Never"
SCHEDULED_CONDITION = "PodGroupInitiallyScheduled"


@dataclass(frozen=True)
class PendingGang:
    namespace: str
    name: str
    trigger: str

    @property
    def key(self) -> GangKey:
        return gang_key_of(self.namespace, self.name)


def _pending_since(pod: KubeObject) -> float | None:
    """When the pod became unschedulable (PodScheduled=False), else when it was created."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            since = timestamp_or_none(condition.get("lastTransitionTime"))
            if since is not None:
                return since
    return timestamp_or_none((pod.get("metadata") or {}).get("creationTimestamp"))


def _policies(objects: list[KubeObject]) -> tuple[dict[str, Group], dict[str, PriorityClass]]:
    """The typed PodGroups and PriorityClasses (only these: detection never parses the whole snapshot)."""
    groups: dict[str, Group] = {}
    classes: dict[str, PriorityClass] = {}
    for obj in objects:
        kind = native_kind(obj)
        try:
            if kind == "PodGroup":
                group = Group(obj, "PodGroup")
                groups[group.key] = group
            elif kind == "PriorityClass":
                pc = PriorityClass(obj)
                classes[pc.name] = pc
        except (ValueError, AttributeError, TypeError) as exc:
            raise SnapshotError(f"{object_label(str(kind), obj)}: {exc}") from None
    return groups, classes


def preemption_policy(group: Group, classes: dict[str, PriorityClass]) -> str:
    """The engine's rule (``Snapshot.preemption_policy``): annotation, then spec, then the PriorityClass."""
    if group.preemption_policy:
        return group.preemption_policy
    pc = classes.get(group.priority_class or "")
    return pc.preemption_policy if pc is not None and pc.preemption_policy else PREEMPT


def unschedulable_condition(podgroup: KubeObject) -> dict | None:
    """kube-scheduler's ``PodGroupInitiallyScheduled=False`` condition on a PodGroup, or None."""
    for condition in (podgroup.get("status") or {}).get("conditions") or []:
        if condition.get("type") == SCHEDULED_CONDITION and condition.get("status") == "False":
            return condition
    return None


def gang_objects(objects: Iterable[KubeObject], gang_key: GangKey) -> list[KubeObject]:
    """What ``unschedulable_gangs`` needs to judge one gang: its PodGroup, its pods and the PriorityClasses
    (the watch trigger's pass, which must not judge every gang for one event; docs/measurements.md)."""
    namespace, _, name = gang_key.partition("/")
    out = []
    for obj in objects:
        # The kind's name and the group name first: most objects are other gangs' pods and nodes, and
        # telling each one's API group first made this pass 172 ms at 20,000 nodes (docs/measurements.md).
        kind = obj.get("kind")
        if kind == "Pod":
            if (
                podstate.group_name(obj) == name
                and str((obj.get("metadata") or {}).get("namespace")) == namespace
                and is_native(obj, "Pod")
            ):
                out.append(obj)
        elif (kind == "PriorityClass" or (kind == "PodGroup" and object_key(obj) == gang_key)) and (
            native_kind(obj) == kind
        ):
            out.append(obj)
    return out


def cached_gang_objects(cache: WatchCache, gang_key: GangKey) -> list[KubeObject]:
    """``gang_objects`` from a watch cache: the gang's pods through its index of pods by gang, not a pass
    over every pod (86-96 ms at 20,000 nodes, once per watch trigger)."""
    nearby = [
        *cache.cached_objects(("PodGroup", "PriorityClass")),
        *cache.cached_indexed("Pod", pod_gang, gang_key),
    ]
    return gang_objects(nearby, gang_key)


def pod_gang(pod: KubeObject) -> tuple[str, ...]:
    """The gang a pod names, as a watch cache's index function."""
    key = podstate.gang_key_of_pod(pod)
    return (key,) if key else ()


def unschedulable_gangs(
    objects: Iterable[KubeObject], *, now: float, grace_seconds: float
) -> list[PendingGang]:
    objects = list(objects)
    oldest_pending: dict[str, float | None] = {}
    for pod in objects:
        if not is_native(pod, "Pod") or not podstate.is_pending(pod):
            continue
        key = podstate.gang_key_of_pod(pod)
        if not key:
            continue
        since = _pending_since(pod)
        earlier = oldest_pending.get(key)
        if key not in oldest_pending or (since is not None and (earlier is None or since < earlier)):
            oldest_pending[key] = since

    groups, classes = _policies([o for o in objects if native_kind(o) in ("PodGroup", "PriorityClass")])
    stuck = []
    for podgroup in (o for o in objects if is_native(o, "PodGroup")):
        key = object_key(podgroup)
        if key not in oldest_pending:
            continue
        group = groups.get(key)
        if group is None or preemption_policy(group, classes) == NEVER:
            continue
        trigger = ""
        condition = unschedulable_condition(podgroup)
        if condition is not None:
            trigger = f"{SCHEDULED_CONDITION}=False ({condition.get('reason') or 'no reason'})"
        since = oldest_pending[key]
        if not trigger and since is not None and now - since >= grace_seconds:
            trigger = f"pods pending for {int(now - since)}s (grace {int(grace_seconds)}s)"
        if trigger:
            namespace, _, name = key.partition("/")
            stuck.append(PendingGang(namespace, name, trigger))
    return sorted(stuck, key=lambda g: g.key)
