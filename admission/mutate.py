"""The mutating decision for a pod: which ``spec.schedulingGroup.podGroupName`` to set, if any.

Pure: request and policy in, patch out. Idempotent by construction: a pod that already names a group
is left alone, so a reinvocation (``reinvocationPolicy: IfNeeded``) yields an empty patch. Only the
one field is added; nothing else on the pod changes (good-practices page: patch only what you need).
"""

from __future__ import annotations

from functools import lru_cache

import msgspec

from admission import labels as L
from admission.inference import claim_of, podgroup_name
from admission.podview import ObjectMeta
from admission.policy import AdmissionPolicy
from admission.review import AdmissionRequest, encode_patch


class Mutation(msgspec.Struct, frozen=True, gc=False):
    # Why the pod was left alone; "" when it joins ``group``.
    skipped: str = ""
    group: str = ""  # the PodGroup the patch names
    source: str = ""  # which inference rule found the gang (see admission.inference)
    # The JSON Patch as the response carries it (base64 of its JSON); b"" when the pod is left alone.
    encoded_patch: bytes = b""

    @property
    def reason(self) -> str:
        """Why the pod was left alone, or which group it joined: for logs and the dashboard."""
        return self.skipped or f"joined PodGroup {self.group} ({self.source})"


# Run for every pod creation, so each reads the struct fields itself rather than through the
# ``label_map``/``annotation_map`` properties: a Python call costs more than the check.
def is_mirror_pod(metadata: ObjectMeta) -> bool:
    annotations = metadata.annotations
    return annotations is not None and L.MIRROR_POD_ANNOTATION in annotations


def opted_out(metadata: ObjectMeta) -> bool:
    labels = metadata.labels
    return labels is not None and labels.get(L.ADMISSION_LABEL) == L.ADMISSION_DISABLED


def grouped_by_controller(metadata: ObjectMeta) -> str:
    """Why the pod's controller groups it itself (a KEP-6089 annotation), or "" when it does not."""
    annotations = metadata.annotations
    if annotations:
        for key in L.CONTROLLER_GROUPED_ANNOTATIONS:
            if key in annotations:
                return f"its controller makes its PodGroup ({key}={annotations[key]})"
    return ""


def pod_scope(request: AdmissionRequest, policy: AdmissionPolicy) -> str:
    """Why the request is out of the webhook's scope, or "" when its pod is gangweb's to look at."""
    pod = request.pod  # set only for core/v1 Pod requests
    if pod is None and not request.is_pod:
        return "not a pod"
    if request.namespace in policy.skipped_namespaces:
        return f"namespace {request.namespace} is excluded"
    if pod is None:
        return "no pod in the request"
    metadata = pod.metadata
    if is_mirror_pod(metadata):
        return "mirror pod"
    if opted_out(metadata):
        return f"pod opted out ({L.ADMISSION_LABEL}={L.ADMISSION_DISABLED})"
    return ""


@lru_cache(maxsize=4096)  # the pods of one gang get the same answer: encode its patch once
def _joined(name: str, source: str, group_object_exists: bool) -> Mutation:
    if group_object_exists:
        operations = [{"op": "add", "path": "/spec/schedulingGroup/podGroupName", "value": name}]
    else:
        # "add" on an existing member (e.g. schedulingGroup: null) replaces it (RFC 6902 4.1).
        operations = [{"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": name}}]
    return Mutation("", name, source, encode_patch(operations).encode("ascii"))


def mutate_pod(request: AdmissionRequest, policy: AdmissionPolicy) -> Mutation:
    if request.operation != "CREATE":
        # spec.schedulingGroup is immutable: only a CREATE can set it.
        return Mutation(f"{request.operation} is not mutated")
    out_of_scope = pod_scope(request, policy)
    if out_of_scope:
        return Mutation(out_of_scope)
    pod = request.pod
    group = pod.spec.schedulingGroup
    if group is not None and group.podGroupName:
        return Mutation(f"already in PodGroup {group.podGroupName}")
    controlled = grouped_by_controller(pod.metadata)
    if controlled:
        return Mutation(controlled)
    # Only the group's name: the gang's size and modes are the PodGroup's business (admission.podgroups).
    claim = claim_of(pod.metadata)
    if claim is None:
        return _NO_GANG
    # A present but empty schedulingGroup ({}) keeps its other fields; absent or null is replaced whole.
    return _joined(podgroup_name(claim.raw_name), claim.source, group is not None)


_NO_GANG = Mutation("no gang")
