"""Kueue plain-pod groups (kueue pkg/controller/jobs/pod constants): the label names the group, the
total-count annotation sizes it."""

from __future__ import annotations

from admission.podview import ObjectMeta
from admission.sources.base import Claim, GangSource, PodLimit, positive_int

POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name = labels.get(POD_GROUP_LABEL, "")
    if not name:
        return None
    return Claim(name, "kueue", positive_int(annotations.get(POD_GROUP_COUNT_ANNOTATION)))


SOURCE = GangSource(
    "kueue",
    claim,
    labels=frozenset({POD_GROUP_LABEL}),
    size_annotation=POD_GROUP_COUNT_ANNOTATION,
    pod_limit=PodLimit(POD_GROUP_COUNT_ANNOTATION, "its Kueue pod group"),
)
