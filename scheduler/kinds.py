"""Which object a raw dict is, told by API group and kind together.

Volcano (``scheduling.volcano.sh``), KAI (``scheduling.run.ai``) and scheduler-plugins
(``scheduling.x-k8s.io``) each have a kind named ``PodGroup``, and Kueue (``kueue.x-k8s.io``) one named
``Workload``; every reader asks ``native_kind``/``is_native`` so that a queue manager's object is never read
as the Kubernetes object of the same kind name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The kinds gangweb reads as Kubernetes' own, with the API groups each lives in (the first is the group an
# object without an apiVersion is taken to have: hand-written snapshots often leave it out).
NATIVE_GROUPS: dict[str, tuple[str, ...]] = {
    "Node": ("",),
    "Pod": ("",),
    "Event": ("", "events.k8s.io"),
    "PodGroup": ("scheduling.k8s.io",),
    "CompositePodGroup": ("scheduling.k8s.io",),
    "Workload": ("scheduling.k8s.io",),
    "PriorityClass": ("scheduling.k8s.io",),
    "PodDisruptionBudget": ("policy",),
    "ResourceSlice": ("resource.k8s.io",),
    "DeviceClass": ("resource.k8s.io",),
    "ResourceClaim": ("resource.k8s.io",),
    "ResourceClaimTemplate": ("resource.k8s.io",),
}


def group_of(api_version: Any) -> str:
    """``scheduling.volcano.sh/v1beta1`` -> ``scheduling.volcano.sh``; ``v1`` -> "" (the core group)."""
    return str(api_version).rpartition("/")[0] if api_version else ""


def group_kind(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(API group, kind) of a raw object; an object without an apiVersion is taken to be of the group its
    kind natively has."""
    kind = obj.get("kind")
    kind = kind if isinstance(kind, str) else ""
    api_version = obj.get("apiVersion")
    if not api_version:
        return NATIVE_GROUPS.get(kind, ("",))[0], kind
    return group_of(api_version), kind


def native_kind(obj: Mapping[str, Any]) -> str | None:
    """The kind when ``obj`` is one of the Kubernetes kinds of ``NATIVE_GROUPS``, else None."""
    group, kind = group_kind(obj)
    return kind if group in NATIVE_GROUPS.get(kind, ()) else None


def is_native(obj: Mapping[str, Any], kind: str) -> bool:
    """Whether ``obj`` is the Kubernetes ``kind`` (not a CRD sharing its name)."""
    return obj.get("kind") == kind and native_kind(obj) == kind
