"""The part of a Pod that gangweb's admission rules read, as typed read-only views.

Why not the parsed JSON dict: kube-apiserver sends the whole pod (containers, volumes, env, probes…)
and the rules read a dozen fields. Decoding the AdmissionReview straight into these views (msgspec)
skips everything else without building it, which halves the webhook's own cost per request (see
docs/admission.md, "Benchmark"). Pods that come as dicts (from the cluster, from tests) become the same
views through ``pod_view``, so there is one pod model for every rule.

Types follow the Kubernetes API (k8s.io/api core/v1): a field of the wrong JSON type makes the whole
review a 400, as the API server itself would have refused such a pod. ``null`` is accepted wherever the
API omits empty values, since hand-written or older clients send it.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct, field

from admission.claims import make_entry

# A resource.Quantity is a string on the wire; numbers are accepted as clients write them in manifests.
Quantity = str | int | float
# The map of a pod without labels (or annotations): shared, never written.
EMPTY_MAP: dict[str, str] = {}
# ``spec.priority`` is an int32 in the API (k8s.io/api core/v1): a value outside it is no Pod the API
# server could have sent. Checked the same way by the typed fast path (decode) and the generic parser
# (convert), so an out-of-range priority is a 400 whichever path a body takes.
Int32 = Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)]


# gc=False: the views hold only strings, numbers and maps of strings, so they cannot form cycles, and
# the collector need not scan thousands of them under load.
class OwnerReference(Struct, gc=False):
    apiVersion: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(Struct, gc=False):
    name: str | None = None
    generateName: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[OwnerReference] | None = None

    @property
    def label_map(self) -> dict[str, str]:
        return self.labels or EMPTY_MAP

    @property
    def annotation_map(self) -> dict[str, str]:
        return self.annotations or EMPTY_MAP

    @property
    def display_name(self) -> str:
        """The name, or for a pod still to be named by the API server its ``generateName``."""
        return self.name or self.generateName or ""


class SchedulingGroup(Struct, gc=False):
    podGroupName: str | None = None


class ResourceRequirements(Struct, gc=False):
    requests: dict[str, Quantity] | None = None
    limits: dict[str, Quantity] | None = None


_decode_resources = msgspec.json.Decoder(ResourceRequirements).decode
_NO_RESOURCES = ResourceRequirements()


class Container(Struct, gc=False):
    # Left as JSON text (``resource_requirements`` decodes it): only the validating webhook reads it,
    # and mostly only to see that two members ask for the same (equal text). Building it for every
    # review cost more in the running server than all of the mutating webhook's rules.
    resources: msgspec.Raw = msgspec.Raw()


def resource_requirements(resources: msgspec.Raw) -> ResourceRequirements:
    """A container's decoded ``resources``; empty when absent or not of the API's shape."""
    if not resources:
        return _NO_RESOURCES
    try:
        return _decode_resources(resources)
    except msgspec.DecodeError:
        return _NO_RESOURCES


class PodResourceClaim(Struct, gc=False):
    """An entry of ``spec.resourceClaims`` (DRA): compared with the PodGroup's (``admission.claims``)."""

    name: str = ""
    resourceClaimName: str | None = None
    resourceClaimTemplateName: str | None = None

    @property
    def entry(self) -> tuple[str, str, str] | None:
        """(name, claim, template) as ``admission.claims`` compares them; None when it is malformed."""
        return make_entry(self.name, self.resourceClaimName, self.resourceClaimTemplateName)


class PodSpec(Struct, gc=False):
    schedulingGroup: SchedulingGroup | None = None
    priority: Int32 | None = None
    priorityClassName: str | None = None
    schedulerName: str | None = None
    preemptionPolicy: str | None = None
    containers: list[Container] | None = None
    resourceClaims: list[PodResourceClaim] | None = None

    @property
    def group_name(self) -> str:
        """``schedulingGroup.podGroupName``, or "" when the pod names no PodGroup."""
        group = self.schedulingGroup
        return (group.podGroupName or "") if group is not None else ""


class Pod(Struct, gc=False):
    metadata: ObjectMeta = field(default_factory=ObjectMeta)
    spec: PodSpec = field(default_factory=PodSpec)


class PodViewError(ValueError):
    """The object is not a Pod of the API's shape; the message names the field (``$.spec.priority``)."""


def pod_view(obj: dict[str, Any]) -> Pod:
    """The view of a pod given as a dict (from the cluster, a fixture, or the generic parser).

    ``msgspec.convert`` reads the dict where it is; only each container's ``resources`` is written back
    to JSON text first, the one field the view keeps as text (convert cannot make it)."""
    if not isinstance(obj, dict):
        raise PodViewError(f"Expected `object`, got `{type(obj).__name__}` - at `$`")
    spec = obj.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    try:
        if isinstance(containers, list):
            as_text = [
                {"resources": msgspec.Raw(msgspec.json.encode(c["resources"]))}
                if isinstance(c, dict) and "resources" in c
                else c
                for c in containers
            ]
            obj = {**obj, "spec": {**spec, "containers": as_text}}
        return msgspec.convert(obj, Pod)
    except (msgspec.ValidationError, TypeError) as error:
        raise PodViewError(str(error)) from None


def as_pod_view(pod: Pod | dict[str, Any]) -> Pod:
    """``pod`` itself when it already is a view, else ``pod_view(pod)``."""
    return pod if pod.__class__ is Pod else pod_view(pod)


def readable_pod(pod: Pod | dict[str, Any]) -> Pod | None:
    """``as_pod_view(pod)``, or None when ``pod`` is not of a Pod's shape: no rule of gangweb's can read it."""
    try:
        return as_pod_view(pod)
    except PodViewError:
        return None


def controller_of(metadata: ObjectMeta) -> OwnerReference | None:
    """The owner reference with ``controller: true``, if any."""
    for reference in metadata.ownerReferences or ():
        if reference.controller is True:
            return reference
    return None
