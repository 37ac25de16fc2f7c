"""NVIDIA KAI-Scheduler: its pod-grouper writes the group name as a bare annotation (``PodGroupNameAnnotation``);
the KAI PodGroup sizes the gang."""

from __future__ import annotations

from admission.podview import ObjectMeta
from admission.sources.base import Claim, GangSource, OwnerRef, OwnerResource, min_member

POD_GROUP_ANNOTATION = "pod-group-name"
QUEUE_LABEL = "kai.scheduler/queue"  # set beside it; not needed to find the gang
PODGROUP = OwnerResource("scheduling.run.ai", "v2alpha2", "podgroups", "PodGroup")
_API_VERSION = PODGROUP.api_version


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name = annotations.get(POD_GROUP_ANNOTATION, "")
    if not name:
        return None
    return Claim(name, "kai-scheduler", None, OwnerRef(_API_VERSION, "PodGroup", name))


SOURCE = GangSource(
    "kai-scheduler", claim, annotations=frozenset({POD_GROUP_ANNOTATION}), owners=(PODGROUP,), size=min_member
)
