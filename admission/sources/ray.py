"""KubeRay (ray-project/kuberay ray-operator/controllers/ray/utils/constant.go): one gang per worker group,
named ``<cluster>-<group>``, sized by the RayCluster's group; the head is a single long-lived pod, no member."""

from __future__ import annotations

from typing import Any

from admission.podview import ObjectMeta
from admission.sources.base import NO_GANG, Claim, GangSource, OwnerRef, OwnerResource, int_or

CLUSTER = "ray.io/cluster"
GROUP = "ray.io/group"
NODE_TYPE = "ray.io/node-type"
RAYCLUSTER = OwnerResource("ray.io", "v1", "rayclusters", "RayCluster")
_API_VERSION = RAYCLUSTER.api_version


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    cluster, group = labels.get(CLUSTER, ""), labels.get(GROUP, "")
    if not (cluster and group):
        return None
    if labels.get(NODE_TYPE, "") != "worker":
        return NO_GANG
    return Claim(f"{cluster}-{group}", "raycluster", None, OwnerRef(_API_VERSION, "RayCluster", cluster))


def group_pods(spec: dict[str, Any], metadata: ObjectMeta) -> int:
    """The pod's worker group: what must start together is the autoscaler's floor, else the fixed size."""
    group = metadata.label_map.get(GROUP, "")
    for worker_group in spec.get("workerGroupSpecs") or []:
        if isinstance(worker_group, dict) and worker_group.get("groupName") == group:
            replicas = int_or(worker_group.get("minReplicas"), 0) or int_or(worker_group.get("replicas"), 1)
            return replicas * int_or(worker_group.get("numOfHosts"), 1)
    return 0


SOURCE = GangSource("raycluster", claim, labels=frozenset({CLUSTER}), owners=(RAYCLUSTER,), size=group_pods)
