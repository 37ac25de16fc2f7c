"""Which running pods a queue manager placed or admitted: one registry of ownership signals per system
(labels, scheduler names, annotations, owner objects), like the webhook's gang sources.

A pod a queue manager owns is not gangweb's to evict behind its back: Kueue still holds its Workload's
quota and the job controller recreates it (a hole in a gang); KAI reclaims again on its next cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import kai, kueue, volcano, yunikorn
from .cluster import QueueMember, QueueReading, build_reading


@dataclass(frozen=True)
class Owner:
    system: str
    object: str  # what owns the pod in that system's words: "Workload team-a/job-x", "PodGroup ml/train"
    action: str  # what that system would have to do to free its room


@dataclass(frozen=True)
class Signal:
    """One way a system marks a pod as its own."""

    system: str
    describes: str  # for docs and messages
    rule: Callable[[QueueMember, Mapping[str, Any]], Owner | None]


def _kueue_workload(pod: QueueMember, ctx: Mapping[str, Any]) -> Owner | None:
    workloads = ctx["kueue_by_owner"]
    for owner in pod.owners:
        found = workloads.get((pod.namespace, owner.get("kind"), owner.get("name")))
        if found:
            return _kueue_owner(found)
    name = pod.labels.get(kueue.POD_GROUP_LABEL)
    found = ctx["kueue_by_name"].get((pod.namespace, name)) if name else None
    return _kueue_owner(found) if found else None


def _kueue_owner(workload: str) -> Owner:
    return Owner(
        "kueue",
        f"Workload {workload}",
        f"Kueue would have to evict Workload {workload} (preemption by its ClusterQueue or Cohort policy, "
        "or spec.active=false), never its pods one by one",
    )


def _kueue_label(pod: QueueMember, ctx: Mapping[str, Any]) -> Owner | None:
    if pod.labels.get("kueue.x-k8s.io/managed") == "true" or kueue.QUEUE_NAME_LABEL in pod.labels:
        queue = pod.labels.get(kueue.QUEUE_NAME_LABEL, "")
        return Owner(
            "kueue",
            f"LocalQueue {pod.namespace}/{queue}" if queue else f"pod {pod.key}",
            f"Kueue would have to evict the Workload of pod {pod.key}, never the pod alone",
        )
    return None


def _volcano(pod: QueueMember, ctx: Mapping[str, Any]) -> Owner | None:
    group = pod.annotations.get(volcano.GROUP_ANNOTATION)
    if pod.scheduler == "volcano" or (group and (pod.namespace, group) in ctx["volcano_groups"]):
        what = f"PodGroup {pod.namespace}/{group}" if group else f"pod {pod.key}"
        return Owner("volcano", what, f"Volcano's reclaim or preempt action would have to evict {what}")
    return None


def _kai(pod: QueueMember, ctx: Mapping[str, Any]) -> Owner | None:
    group = pod.annotations.get(kai.POD_GROUP_ANNOTATION)
    if pod.scheduler == "kai-scheduler" or kai.QUEUE_LABEL in pod.labels:
        what = f"PodGroup {pod.namespace}/{group}" if group else f"pod {pod.key}"
        queue = pod.labels.get(kai.QUEUE_LABEL)
        where = f" of queue {queue}" if queue else ""
        return Owner(
            "kai", what, f"KAI-Scheduler would have to reclaim {what}{where} (it reclaims by itself)"
        )
    return None


def _yunikorn(pod: QueueMember, ctx: Mapping[str, Any]) -> Owner | None:
    if pod.scheduler == yunikorn.SCHEDULER_NAME:
        app = next((pod.labels[k] for k in yunikorn.APP_ID_LABELS if pod.labels.get(k)), None)
        what = f"application {pod.namespace}/{app}" if app else f"pod {pod.key}"
        return Owner("yunikorn", what, f"YuniKorn's preemption would have to evict {what}")
    return None


SIGNALS: tuple[Signal, ...] = (
    Signal(
        "kueue",
        "a controller owner shared with a Workload holding quota, or its pod-group-name label",
        _kueue_workload,
    ),
    Signal("kueue", "label kueue.x-k8s.io/managed=true or kueue.x-k8s.io/queue-name", _kueue_label),
    Signal("volcano", "schedulerName volcano, or the group-name annotation of a Volcano PodGroup", _volcano),
    Signal("kai", "schedulerName kai-scheduler, or label kai.scheduler/queue", _kai),
    Signal("yunikorn", "schedulerName yunikorn", _yunikorn),
)


def _context(reading: QueueReading) -> dict[str, Any]:
    by_owner: dict[tuple, str] = {}
    by_name: dict[tuple, str] = {}
    for workload in reading.objects(kueue.GROUP, "Workload"):
        if not kueue.is_admitted(workload):
            continue
        meta = workload.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        by_name[(meta.get("namespace"), meta.get("name"))] = key
        for owner in meta.get("ownerReferences") or []:
            by_owner[(meta.get("namespace"), owner.get("kind"), owner.get("name"))] = key
    groups = {
        ((o.get("metadata") or {}).get("namespace"), (o.get("metadata") or {}).get("name"))
        for o in reading.objects(volcano.GROUP, "PodGroup")
    }
    return {"kueue_by_owner": by_owner, "kueue_by_name": by_name, "volcano_groups": groups}


def owners(reading: QueueReading, pods: Iterable[QueueMember] | None = None) -> dict[str, Owner]:
    """Pod key -> its owner, for the running pods a queue manager owns (the first signal that says so)."""
    ctx = _context(reading)
    out: dict[str, Owner] = {}
    for pod in pods if pods is not None else reading.pods:
        if not pod.bound or not pod.active:
            continue
        for signal in SIGNALS:
            found = signal.rule(pod, ctx)
            if found is not None:
                out[pod.key] = found
                break
    return out


_SCHEDULERS = frozenset({"volcano", "kai-scheduler", yunikorn.SCHEDULER_NAME})
_LABELS = frozenset(
    {kueue.QUEUE_NAME_LABEL, kueue.POD_GROUP_LABEL, "kueue.x-k8s.io/managed", kai.QUEUE_LABEL}
)
_ANNOTATIONS = frozenset({volcano.GROUP_ANNOTATION, kai.POD_GROUP_ANNOTATION})


def may_be_owned(pod: Mapping[str, Any], with_owner_refs: bool) -> bool:
    """Whether any signal could match this raw pod (a cheap look before its facts are gathered)."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    if spec.get("schedulerName") in _SCHEDULERS:
        return True
    if not _LABELS.isdisjoint(meta.get("labels") or ()) or not _ANNOTATIONS.isdisjoint(
        meta.get("annotations") or ()
    ):
        return True
    return with_owner_refs and bool(meta.get("ownerReferences"))


def owners_of(objects: list[Mapping[str, Any]], snapshot) -> dict[str, Owner]:
    """``owners`` straight from raw objects, gathering facts only of the pods a signal could match."""
    workloads = any(kueue_kind(o) for o in objects)
    reading = build_reading(objects, snapshot, requests=False, keep=lambda pod: may_be_owned(pod, workloads))
    return owners(reading)


# The kinds (by name, any API group) whose objects the signals read beside the pods: Kueue's Workloads
# and Volcano's PodGroups (``_context``). A reader of an indexed cache passes these and the candidates.
CONTEXT_KINDS = frozenset({"Workload", "PodGroup"})
SIGNAL_MARK = "signal"


def ownership_marks(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """What a watch cache files a raw pod under for ``owners_of`` (an index function): ``signal`` when a
    signal of its own could match it, and one ``owner_mark`` per owner reference (Kueue's Workloads name
    their job's owner). Most pods have neither signal nor a Workload's owner: a plan then reads a few."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace")
    marks = [
        owner_mark(namespace, o.get("kind"), o.get("name"))
        for o in meta.get("ownerReferences") or ()
        if isinstance(o, Mapping)
    ]
    if may_be_owned(pod, with_owner_refs=False):
        marks.append(SIGNAL_MARK)
    return tuple(marks)


def candidate_marks(context: list[Mapping[str, Any]]) -> list[str]:
    """The marks (``ownership_marks``) of every pod ``owners_of`` could name, given the objects of
    ``CONTEXT_KINDS``: those with a signal, and those owned by what a Kueue Workload is owned by."""
    marks = {SIGNAL_MARK}
    for workload in context:
        if kueue_kind(workload):
            meta = workload.get("metadata") or {}
            for o in meta.get("ownerReferences") or ():
                if isinstance(o, Mapping):
                    marks.add(owner_mark(meta.get("namespace"), o.get("kind"), o.get("name")))
    return sorted(marks)


def owner_mark(namespace: Any, kind: Any, name: Any) -> str:
    return f"owner:{namespace}/{kind}/{name}"


def kueue_kind(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Workload" and str(obj.get("apiVersion", "")).startswith(f"{kueue.GROUP}/")
