"""The validating decision: reject what would fail the whole gang later, warn about what looks wrong.

Pure apart from reading the ``GangIndex``; what should be remembered afterwards is returned in
``Verdict.remember`` and stored by the caller once the answer is "allowed" (and not a dry run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from admission import labels as L
from admission.apirules import check_podgroup, check_workload
from admission.controllers import (
    JOB, JOBSET, KUBEFLOW_GROUP, LWS, controller_problems, describe_shape, gpu_shape, requested_resources,
)
from admission.inference import gang_of, positive_int
from admission.mutate import pod_scope
from admission.podview import Pod, controller_of
from admission.policy import AdmissionPolicy
from admission.review import AdmissionRequest
from admission.state import GangIndex, MemberSignature

SCHEDULING_GROUP = "scheduling.k8s.io"


class Verdict(msgspec.Struct, gc=False):
    allowed: bool = True
    message: str = ""
    warnings: list[str] = msgspec.field(default_factory=list)
    # Applied to the GangIndex by the caller when the request is allowed and not a dry run.
    remember: Callable[[GangIndex], None] | None = None


def _deny(subject: str, problems: list[str], warnings: list[str] | None = None) -> Verdict:
    return Verdict(allowed=False, message=f"{subject}: " + "; ".join(problems), warnings=warnings or [])


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _subject(request: AdmissionRequest) -> str:
    return f"{request.kind} {request.namespace}/{request.object_name(generated_mark='*') or '*'}"


def _signature(pod: Pod) -> MemberSignature:
    spec, owner = pod.spec, controller_of(pod.metadata)
    return MemberSignature(
        spec.priority,
        spec.priorityClassName or "",
        # Unset means the default scheduler, and the apiserver defaults it before admission anyway.
        spec.schedulerName or "default-scheduler",
        requested_resources(spec),
        owner.uid if owner is not None else "",
        pod.metadata.display_name or "?",
    )


def _describe_priority(priority: int | None, priority_class: str) -> str:
    return f"priority {priority if priority is not None else 'unset'} (class {priority_class or 'none'})"


def _pod_size_problems(annotations: dict[str, Any]) -> list[str]:
    raw = annotations.get(L.MIN_COUNT_ANNOTATION)
    if raw is None:
        return []
    wanted = positive_int(raw)
    if wanted is None:
        return [f"annotation {L.MIN_COUNT_ANNOTATION} is {raw!r}; set a whole number >= 1"]
    for key, what in ((L.LWS_SIZE, "its LeaderWorkerSet group"), (L.KUEUE_POD_GROUP_COUNT_ANNOTATION, "its Kueue pod group")):
        size = positive_int(annotations.get(key))
        if size is not None and wanted > size:
            return [
                f"{L.MIN_COUNT_ANNOTATION} is {wanted} but {what} has only {size} pods ({key}), so the gang can "
                f"never start; lower {L.MIN_COUNT_ANNOTATION} to {size} or drop it"
            ]
    return []


def _validate_pod(request: AdmissionRequest, policy: AdmissionPolicy, index: GangIndex) -> Verdict:
    pod = request.pod
    if request.operation == "UPDATE":
        old_group = request.old_pod.spec.group_name if request.old_pod is not None else ""
        if pod is not None and old_group != pod.spec.group_name:
            return _deny(
                _subject(request),
                [f"spec.schedulingGroup.podGroupName is immutable (was {old_group or 'unset'}); delete and recreate the pod"],
            )
        return Verdict()
    if request.operation != "CREATE" or pod_scope(request, policy):
        return Verdict()
    metadata = pod.metadata
    annotations = metadata.annotations
    if annotations and L.MIN_COUNT_ANNOTATION in annotations:
        problems = _pod_size_problems(annotations)
        if problems:
            return _deny(_subject(request), problems)
    group = pod.spec.group_name
    if not group:
        gang = gang_of(metadata, request.namespace, policy)
        if gang is None:
            return Verdict()
        return Verdict(warnings=[
            f"gangweb: pod belongs to gang {gang.name} ({gang.source}) but names no PodGroup; it will be "
            "scheduled alone: check the gangweb mutating webhook"
        ])  # fmt: skip
    key = (request.namespace, group)
    mine = _signature(pod)
    problems, warnings = [], []
    podgroup, sibling = index.lookup(key, mine.owner_uid)
    if podgroup is not None:
        differs = (podgroup.priority is not None and mine.priority is not None and podgroup.priority != mine.priority) or (
            podgroup.priority_class and podgroup.priority_class != mine.priority_class
        )
        if differs:
            problems.append(
                f"{_describe_priority(mine.priority, mine.priority_class)} differs from PodGroup {group}'s "
                f"{_describe_priority(podgroup.priority, podgroup.priority_class)}; set priorityClassName "
                f"{podgroup.priority_class or '(the PodGroup’s)'} on the pod template so the gang has one priority"
            )
    if sibling is not None:
        if (sibling.priority, sibling.priority_class) != (mine.priority, mine.priority_class):
            problems.append(
                f"{_describe_priority(mine.priority, mine.priority_class)} differs from gang {group} member "
                f"{sibling.pod} with {_describe_priority(sibling.priority, sibling.priority_class)}; give every "
                "member the same priorityClassName, or the scheduler fails the whole group"
            )
        if sibling.scheduler_name != mine.scheduler_name:
            problems.append(
                f"schedulerName {mine.scheduler_name} differs from gang {group} member {sibling.pod} "
                f"({sibling.scheduler_name}); one scheduler must place the whole gang: use the same schedulerName"
            )
        if sibling.resources != mine.resources:
            theirs, ours = gpu_shape(sibling.resources), gpu_shape(mine.resources)
            if theirs != ours and theirs and ours:
                warnings.append(
                    f"gang {group}: this pod asks {describe_shape(ours)}, member {sibling.pod} asks "
                    f"{describe_shape(theirs)}"[:250]
                )
    if problems:
        return _deny(_subject(request), problems, warnings)
    if sibling is not None:
        return Verdict(warnings=warnings)  # the gang's first member stays the one to match
    return Verdict(warnings=warnings, remember=lambda idx: idx.remember_member(key, mine))


def _validate_scheduling(request: AdmissionRequest) -> Verdict:
    obj = request.object or {}
    key = (request.namespace, str(_dict(obj.get("metadata")).get("name") or request.name))
    if request.kind == "PodGroup":
        if request.operation == "DELETE":
            return Verdict(remember=lambda idx: idx.forget_podgroup(key))
        if request.operation not in ("CREATE", "UPDATE"):
            return Verdict()
        problems = check_podgroup(obj, request.old_object if request.operation == "UPDATE" else None)
        if problems:
            return _deny(_subject(request), problems)
        return Verdict(remember=lambda idx: idx.remember_podgroup(key, obj))
    if request.kind == "Workload" and request.operation in ("CREATE", "UPDATE"):
        problems = check_workload(obj, request.old_object if request.operation == "UPDATE" else None)
        if problems:
            return _deny(_subject(request), problems)
    return Verdict()


def validate(request: AdmissionRequest, policy: AdmissionPolicy, index: GangIndex) -> Verdict:
    if request.pod is not None or request.is_pod:  # only pod requests carry a pod view
        return _validate_pod(request, policy, index)
    if request.group == SCHEDULING_GROUP:
        return _validate_scheduling(request)
    kind = (request.group, request.kind)
    if request.operation in ("CREATE", "UPDATE") and (kind in (JOB, JOBSET, LWS) or request.group == KUBEFLOW_GROUP):
        problems, warnings = controller_problems(kind, request.object or {})
        if problems:
            return _deny(_subject(request), problems, warnings)
        return Verdict(warnings=warnings)
    return Verdict()
