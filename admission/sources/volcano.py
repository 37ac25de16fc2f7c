"""Volcano: the group-name annotation (volcano.sh/apis ``KubeGroupNameAnnotationKey``; Volcano Jobs set
``<job>-<uid>``) names the group, the Volcano PodGroup sizes it."""

from __future__ import annotations

from admission.podview import ObjectMeta
from admission.sources.base import Claim, GangSource, OwnerRef, OwnerResource, min_member

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
JOB_NAME = "volcano.sh/job-name"  # set by Volcano Jobs beside the annotation; not needed to find the gang
PODGROUP = OwnerResource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
_API_VERSION = PODGROUP.api_version


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name = annotations.get(GROUP_ANNOTATION, "")
    if not name:
        return None
    return Claim(name, "volcano", None, OwnerRef(_API_VERSION, "PodGroup", name))


SOURCE = GangSource(
    "volcano", claim, annotations=frozenset({GROUP_ANNOTATION}), owners=(PODGROUP,), size=min_member
)
