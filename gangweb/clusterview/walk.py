"""One walk over a reading's objects, for both its readers: the GPU map's picture (``picture``) and the API's
rows (``rows``) are built from the same ``Walk``, so the map and the API cannot class a pod two ways.

The rules, each in one place:

- a pod in a finished phase (Succeeded, Failed) is left out: it holds no GPU and waits for nothing;
- every other pod's GPUs are counted once (``scheduler.engine.resources.pod_gpus``, the engine's rule);
- a pod naming a PodGroup (``spec.schedulingGroup.podGroupName``) is a member of the gang
  ``NAMESPACE/GROUP``, whether that PodGroup exists or not;
- a **lone GPU pod** (one naming no PodGroup and asking for GPUs) is a gang of its own, of one member,
  keyed ``NAMESPACE/POD``: the map draws it as a gang (``podGroup: false``) and the API's node rows list its
  GPUs under the pod's name, the name its node page links to. It has no PodGroup row (``/api/v1/podgroups/``
  lists PodGroups), so a pending one is among the map's waiting gangs only. A pod naming no PodGroup and
  asking for no GPU is in no gang: it holds nothing either reader draws;
- a member with a node (``spec.nodeName``) is placed there and holds its GPUs, terminating or not (a
  terminating pod holds its room until it is gone); one without a node waits (``waits``) unless it is
  terminating: it will never be placed;
- a gang's ``minCount`` (``min_count``) is its PodGroup's gang ``minCount``, 1 for a ``basic`` PodGroup
  (its pods are placed one by one), else the PodGroup's old ``spec.minCount``, else its pod count (a lone pod,
  a missing PodGroup).

Plain Python over API-shaped dicts, no Django: the walk is part of every tick's picture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduler import podstate
from scheduler.engine.gangkey import GangKey, gang_key_of
from scheduler.engine.resources import pod_gpus

Obj = dict[str, Any]


def no_pause() -> None:
    """The pace of a walk nobody runs beside: none."""


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def waits(pod: Obj) -> bool:
    """A member waiting to be placed: no node, and not being deleted (a terminating one never will be)."""
    return not (pod.get("spec") or {}).get("nodeName") and not _meta(pod).get("deletionTimestamp")


def min_count(podgroup: Obj | None, pods: list[Obj]) -> int:
    """How many of the gang's members must be placed together (the module's rule)."""
    spec = (podgroup or {}).get("spec") or {}
    policy = spec.get("schedulingPolicy")
    if isinstance(policy, dict):
        if isinstance(policy.get("gang"), dict) and policy["gang"].get("minCount"):
            return int(policy["gang"]["minCount"])
        if "basic" in policy and "gang" not in policy:
            return 1
    return int(spec.get("minCount") or len(pods))


@dataclass(eq=False)
class Walk:
    """The objects by kind, and the gangs, members and placements found in them (see the module)."""

    by_kind: dict[str, list[Obj]]
    groups: dict[GangKey, Obj]  # gang key -> its PodGroup
    gpus: dict[int, int] = field(default_factory=dict)  # id(pod) -> its GPUs, every unfinished pod
    bound: dict[str, Obj] = field(default_factory=dict)  # pod key -> live (not terminating) bound pod
    members: dict[GangKey, list[Obj]] = field(default_factory=dict)  # gang key -> its unfinished pods
    gang_of: dict[str, GangKey] = field(default_factory=dict)  # pod key -> its gang's key, every member
    on_node: dict[str, list[Obj]] = field(default_factory=dict)  # node -> members placed on it
    nominated_on: dict[str, list[Obj]] = field(default_factory=dict)  # node -> unplaced ones nominated
    placed: dict[GangKey, int] = field(default_factory=dict)  # gang key -> its members with a node


def walk(objects: Iterable[Obj], pause: Callable[[], None] = no_pause) -> Walk:
    """The walk over ``objects``; ``pause`` is called in its loops (``reading.Pace``: a walk beside
    requests lets them run)."""
    by_kind: dict[str, list[Obj]] = {}
    for obj in objects:
        by_kind.setdefault(obj.get("kind", ""), []).append(obj)
    found = Walk(
        by_kind,
        {
            gang_key_of(_meta(g).get("namespace"), _meta(g).get("name")): g
            for g in by_kind.get("PodGroup", [])
        },
    )
    gpus, bound, members, gang_of = found.gpus, found.bound, found.members, found.gang_of
    for pod in by_kind.get("Pod", []):
        pause()
        if podstate.is_finished(pod):
            continue
        count = gpus[id(pod)] = pod_gpus(pod)
        meta = _meta(pod)
        namespace, name = meta.get("namespace"), meta.get("name")
        pod_key = f"{namespace}/{name}"
        if podstate.is_bound(pod) and not podstate.is_terminating(pod):
            bound[pod_key] = pod
        group = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if group:
            gang_key = gang_key_of(namespace, group)
        elif count:
            gang_key = GangKey(pod_key)  # a lone GPU pod: a gang of its own, keyed by its pod's key
        else:
            continue
        members.setdefault(gang_key, []).append(pod)
        gang_of[pod_key] = gang_key
    # Gang by gang, as the map has always met them (the order nominated squares are handed out in).
    for gang_key, pods in members.items():
        pause()
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                found.on_node.setdefault(node, []).append(pod)
                found.placed[gang_key] = found.placed.get(gang_key, 0) + 1
            elif nominee := (pod.get("status") or {}).get("nominatedNodeName"):
                found.nominated_on.setdefault(nominee, []).append(pod)
    return found
