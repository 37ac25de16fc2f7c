"""LeaderWorkerSet (kubernetes-sigs/lws api/leaderworkerset/v1 constants): one gang per group, a leader and
its workers serving one model replica together, named ``<lws>-<group index>``; the size annotation (or the
LeaderWorkerSet's ``leaderWorkerTemplate.size``) sizes it."""

from __future__ import annotations

from typing import Any

from admission.podview import ObjectMeta
from admission.sources.base import (
    Capacity,
    Claim,
    ControllerRules,
    GangSource,
    OwnerRef,
    OwnerResource,
    PodLimit,
    Template,
    as_dict,
    int_or,
    positive_int,
)

NAME = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
SIZE = "leaderworkerset.sigs.k8s.io/size"
LEADERWORKERSET = OwnerResource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet")
_API_VERSION = LEADERWORKERSET.api_version


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name, index = labels.get(NAME, ""), labels.get(GROUP_INDEX, "")
    if not (name and index):
        return None
    return Claim(
        f"{name}-{index}",
        "leaderworkerset",
        positive_int(annotations.get(SIZE)),
        OwnerRef(_API_VERSION, "LeaderWorkerSet", name),
    )


def group_size(spec: dict[str, Any]) -> int:
    return int_or(as_dict(spec.get("leaderWorkerTemplate")).get("size"), 1)


def _templates(spec: dict[str, Any]) -> list[Template]:
    lwt = as_dict(spec.get("leaderWorkerTemplate"))
    return [
        Template(name, as_dict(lwt.get(name)))
        for name in ("leaderTemplate", "workerTemplate")
        if lwt.get(name)
    ]


SOURCE = GangSource(
    "leaderworkerset",
    claim,
    labels=frozenset({NAME}),
    owners=(LEADERWORKERSET,),
    size=lambda spec, metadata: group_size(spec),
    controller=ControllerRules(
        lambda spec: Capacity(group_size(spec), "spec.leaderWorkerTemplate.size"), _templates
    ),
    pod_limit=PodLimit(SIZE, "its LeaderWorkerSet group"),
)
