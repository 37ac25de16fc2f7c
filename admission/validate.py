"""The validating decision: reject what would fail the whole gang later, warn about what looks wrong.

Pure: a decision reads the review and the PodGroups the API server holds (``PodGroupCache``, filled by
a watch), nothing else. It remembers nothing of a review, so no review (a forged one included) can
change the answer to another, and every replica answers a review alike (docs/admission.md).
"""

from __future__ import annotations

from typing import Any

import msgspec

from admission import labels as L
from admission.apirules import check_podgroup, check_workload
from admission.claims import pod_claim_findings
from admission.controllers import controller_problems
from admission.inference import gang_of
from admission.mutate import pod_scope
from admission.policy import AdmissionPolicy
from admission.review import AdmissionRequest
from admission.sources import POD_LIMITS, controller_source
from admission.sources.base import positive_int
from admission.state import PodGroupCache
from scheduler.engine.gangkey import gang_key_of

SCHEDULING_GROUP = "scheduling.k8s.io"


class Verdict(msgspec.Struct, gc=False):
    allowed: bool = True
    message: str = ""
    warnings: list[str] = msgspec.field(default_factory=list)


def _deny(subject: str, problems: list[str], warnings: list[str] | None = None) -> Verdict:
    return Verdict(allowed=False, message=f"{subject}: " + "; ".join(problems), warnings=warnings or [])


def _subject(request: AdmissionRequest) -> str:
    return f"{request.kind} {request.namespace}/{request.object_name(generated_mark='*') or '*'}"


def _describe_priority(priority: int | None, priority_class: str) -> str:
    return f"priority {priority if priority is not None else 'unset'} (class {priority_class or 'none'})"


def _pod_size_problems(annotations: dict[str, Any]) -> list[str]:
    raw = annotations.get(L.MIN_COUNT_ANNOTATION)
    if raw is None:
        return []
    wanted = positive_int(raw)
    if wanted is None:
        return [f"annotation {L.MIN_COUNT_ANNOTATION} is {raw!r}; set a whole number >= 1"]
    for key, what in POD_LIMITS:
        size = positive_int(annotations.get(key))
        if size is not None and wanted > size:
            return [
                f"{L.MIN_COUNT_ANNOTATION} is {wanted} but {what} has only {size} pods ({key}), so the gang can "
                f"never start; lower {L.MIN_COUNT_ANNOTATION} to {size} or drop it"
            ]
    return []


def _validate_pod(request: AdmissionRequest, policy: AdmissionPolicy, podgroups: PodGroupCache) -> Verdict:
    pod = request.pod
    if request.operation == "UPDATE":
        old_group = request.old_pod.spec.group_name if request.old_pod is not None else ""
        if pod is not None and old_group != pod.spec.group_name:
            return _deny(
                _subject(request),
                [
                    f"spec.schedulingGroup.podGroupName is immutable (was {old_group or 'unset'}); delete and recreate the pod"
                ],
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
        return Verdict(
            warnings=[
                f"gangweb: pod belongs to gang {gang.name} ({gang.source}) but names no PodGroup; it will be "
                "scheduled alone: check the gangweb mutating webhook"
            ]
        )
    podgroup = podgroups.get(gang_key_of(request.namespace, group))
    if podgroup is None:
        return Verdict()
    spec = pod.spec
    priority, priority_class = spec.priority, spec.priorityClassName or ""
    differs = (podgroup.priority is not None and priority is not None and podgroup.priority != priority) or (
        podgroup.priority_class and podgroup.priority_class != priority_class
    )
    if differs:
        return _deny(
            _subject(request),
            [
                f"{_describe_priority(priority, priority_class)} differs from PodGroup {group}'s "
                f"{_describe_priority(podgroup.priority, podgroup.priority_class)}; set priorityClassName "
                f"{podgroup.priority_class or '(the PodGroup’s)'} on the pod template so the gang has one priority"  # noqa: RUF001
            ],
        )
    if podgroup.claims and spec.resourceClaims:
        problems, warnings = pod_claim_findings(
            [c.entry for c in spec.resourceClaims], group, podgroup.claims
        )
        if problems:
            return _deny(_subject(request), problems, warnings)
        return Verdict(warnings=warnings)
    return Verdict()


def _validate_scheduling(request: AdmissionRequest) -> Verdict:
    obj = request.object or {}
    if request.kind == "PodGroup" and request.operation in ("CREATE", "UPDATE"):
        # The group's own API rules only: what a pod is compared with comes from the API, not from here.
        problems = check_podgroup(obj, request.old_object if request.operation == "UPDATE" else None)
        if problems:
            return _deny(_subject(request), problems)
    if request.kind == "Workload" and request.operation in ("CREATE", "UPDATE"):
        problems = check_workload(obj, request.old_object if request.operation == "UPDATE" else None)
        if problems:
            return _deny(_subject(request), problems)
    return Verdict()


def validate(request: AdmissionRequest, policy: AdmissionPolicy, podgroups: PodGroupCache) -> Verdict:
    if request.pod is not None or request.is_pod:  # only pod requests carry a pod view
        return _validate_pod(request, policy, podgroups)
    if request.group == SCHEDULING_GROUP:
        return _validate_scheduling(request)
    source = (
        controller_source(request.group, request.kind) if request.operation in ("CREATE", "UPDATE") else None
    )
    if source is not None:
        problems, warnings = controller_problems(source, request.object or {})
        if problems:
            return _deny(_subject(request), problems, warnings)
        return Verdict(warnings=warnings)
    return Verdict()
