"""scheduler-plugins coscheduling: the pod's label names the group, the coscheduling PodGroup sizes it."""

from __future__ import annotations

from admission.podview import ObjectMeta
from admission.sources.base import Claim, GangSource, OwnerRef, OwnerResource, min_member, positive_int

# The current label, and the pre-v0.24 label of the lightweight plugin with its size label.
LABEL = "scheduling.x-k8s.io/pod-group"
LEGACY_LABEL = "pod-group.scheduling.sigs.k8s.io"
LEGACY_MIN_LABEL = "pod-group.scheduling.sigs.k8s.io/min-available"
PODGROUP = OwnerResource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
_API_VERSION = PODGROUP.api_version


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name = labels.get(LABEL, "") or labels.get(LEGACY_LABEL, "")
    if not name:
        return None
    return Claim(
        name,
        "coscheduling",
        positive_int(labels.get(LEGACY_MIN_LABEL)),
        OwnerRef(_API_VERSION, "PodGroup", name),
    )


SOURCE = GangSource(
    "coscheduling", claim, labels=frozenset({LABEL, LEGACY_LABEL}), owners=(PODGROUP,), size=min_member
)
