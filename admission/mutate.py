"""The mutating decision for a pod: which ``spec.schedulingGroup.podGroupName`` to set, if any.

Pure: request and policy in, patch out. Idempotent by construction: a pod that already names a group
is left alone, so a reinvocation (``reinvocationPolicy: IfNeeded``) yields an empty patch. Only the
one field is added; nothing else on the pod changes (good-practices page: patch only what you need).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from admission import labels as L
from admission.inference import Gang, gang_of
from admission.podview import ObjectMeta
from admission.policy import AdmissionPolicy
from admission.review import AdmissionRequest, encode_patch


@dataclass(slots=True)
class Mutation:
    patch: list[dict[str, Any]] = field(default_factory=list)
    gang: Gang | None = None
    # Why the pod was left alone, or which group it joined: for logs and the dashboard.
    reason: str = ""
    # ``patch`` as the response carries it (base64 of its JSON), b"" without a patch.
    encoded_patch: bytes = b""


def is_mirror_pod(metadata: ObjectMeta) -> bool:
    return L.MIRROR_POD_ANNOTATION in metadata.annotation_map


def opted_out(metadata: ObjectMeta) -> bool:
    return metadata.label_map.get(L.ADMISSION_LABEL) == L.ADMISSION_DISABLED


def pod_scope(request: AdmissionRequest, policy: AdmissionPolicy) -> str:
    """Why the request is out of the webhook's scope, or "" when its pod is gangweb's to look at."""
    if not request.is_pod:
        return "not a pod"
    if request.namespace in policy.skipped_namespaces:
        return f"namespace {request.namespace} is excluded"
    if request.pod is None:
        return "no pod in the request"
    metadata = request.pod.metadata
    if is_mirror_pod(metadata):
        return "mirror pod"
    if opted_out(metadata):
        return f"pod opted out ({L.ADMISSION_LABEL}={L.ADMISSION_DISABLED})"
    return ""


def _patch_to(name: str, group_object_exists: bool) -> list[dict[str, Any]]:
    if group_object_exists:
        return [{"op": "add", "path": "/spec/schedulingGroup/podGroupName", "value": name}]
    # "add" on an existing member (e.g. schedulingGroup: null) replaces it (RFC 6902 4.1).
    return [{"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": name}}]


@lru_cache(maxsize=4096)  # the pods of one gang get the same patch: encode it once
def _encoded_patch(name: str, group_object_exists: bool) -> bytes:
    return encode_patch(_patch_to(name, group_object_exists)).encode("ascii")


def mutate_pod(request: AdmissionRequest, policy: AdmissionPolicy) -> Mutation:
    if request.operation != "CREATE":
        # spec.schedulingGroup is immutable: only a CREATE can set it.
        return Mutation(reason=f"{request.operation} is not mutated")
    out_of_scope = pod_scope(request, policy)
    if out_of_scope:
        return Mutation(reason=out_of_scope)
    pod = request.pod
    current = pod.spec.group_name
    if current:
        return Mutation(reason=f"already in PodGroup {current}")
    gang = gang_of(pod.metadata, request.namespace, policy)
    if gang is None:
        return Mutation(reason="no gang")
    # A present but empty schedulingGroup ({}) keeps its other fields; absent or null is replaced whole.
    exists = pod.spec.schedulingGroup is not None
    return Mutation(_patch_to(gang.name, exists), gang, f"joined PodGroup {gang.name} ({gang.source})",
                    _encoded_patch(gang.name, exists))  # fmt: skip
