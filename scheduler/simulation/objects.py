"""Render the simulation's records as Kubernetes API objects (plain dicts, real 1.37 shapes).

Every function returns a fresh dict, so callers may keep or change what they get.
"""

from __future__ import annotations

from typing import Any

from scheduler.simulation.catalog import (
    GANG_LABEL,
    GPU,
    GPU_PRODUCT,
    HOSTNAME_LABEL,
    NODE_ALLOCATABLE,
    RACK_LABEL,
    ZONE_LABEL,
    Tier,
)
from scheduler.simulation.state import Gang, SimNode, SimPod, rfc3339, stable_uid


def _meta(
    name: str,
    created: float,
    resource_version: int,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    kind: str = "",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "uid": stable_uid(kind, namespace or "", name, int(created)),
        "resourceVersion": str(resource_version),
        "creationTimestamp": rfc3339(created),
    }
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def node_object(node: SimNode) -> dict[str, Any]:
    labels = {
        HOSTNAME_LABEL: node.name,
        ZONE_LABEL: node.zone,
        RACK_LABEL: node.rack,
        "nvidia.com/gpu.product": GPU_PRODUCT,
        "nvidia.com/gpu.count": str(len(node.slots)),
    }
    ready = "True" if node.ready else "False"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(node.name, node.created, node.resource_version, labels=labels, kind="Node"),
        "spec": {},
        "status": {
            "capacity": dict(NODE_ALLOCATABLE),
            "allocatable": dict(NODE_ALLOCATABLE),
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "reason": "KubeletReady" if node.ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if node.ready else "kubelet stopped posting",
                    "lastHeartbeatTime": rfc3339(node.created),
                    "lastTransitionTime": rfc3339(node.created),
                }
            ],
        },
    }


def priority_class_object(tier: Tier, created: float) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _meta(tier.priority_class, created, 1, kind="PriorityClass"),
        "value": tier.value,
        "globalDefault": False,
        "description": tier.description,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def podgroup_object(gang: Gang) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {"minCount": gang.min_count}},
        "disruptionMode": {gang.tier.disruption: {}},
        "priorityClassName": gang.tier.priority_class,
        "priority": gang.tier.value,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if gang.topology:
        spec["schedulingConstraints"] = {"topology": [{"key": RACK_LABEL}]}
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": _meta(
            gang.name,
            gang.created,
            gang.resource_version,
            gang.namespace,
            {GANG_LABEL: gang.name},
            kind="PodGroup",
        ),
        "spec": spec,
    }
    if gang.annotations:
        obj["metadata"]["annotations"] = dict(gang.annotations)
    if gang.conditions:
        obj["status"] = {"conditions": [dict(c) for c in gang.conditions]}
    return obj


def pod_object(pod: SimPod, gang: Gang) -> dict[str, Any]:
    requests = {
        "cpu": str(gang.cpu_per_pod),
        "memory": f"{gang.memory_gi_per_pod}Gi",
        GPU: str(gang.pod_gpus),
    }
    spec: dict[str, Any] = {
        "schedulingGroup": {"podGroupName": gang.name},
        "priorityClassName": gang.tier.priority_class,
        "priority": gang.tier.value,
        "schedulerName": "default-scheduler",
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "containers": [
            {
                "name": "worker",
                "image": "registry.example.com/gangweb/trainer:1.0",
                "resources": {"requests": requests, "limits": {GPU: str(gang.pod_gpus)}},
            }
        ],
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
    }
    status: dict[str, Any]
    if pod.node is not None:
        spec["nodeName"] = pod.node
        status = {
            "phase": "Running",
            "startTime": rfc3339(pod.started or pod.created),
            "conditions": [dict(c) for c in pod.conditions],
        }
    else:
        status = {"phase": "Pending", "conditions": [dict(c) for c in pod.conditions]}
    if not status["conditions"]:
        del status["conditions"]
    labels = {GANG_LABEL: gang.name, "gangweb.io/tier": gang.tier.priority_class}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(pod.name, pod.created, pod.resource_version, pod.namespace, labels, kind="Pod"),
        "spec": spec,
        "status": status,
    }


def pdb_object(gang: Gang, healthy: int, at: float) -> dict[str, Any]:
    """A PodDisruptionBudget over the gang's pods, with the status the disruption controller would write."""
    desired = gang.pdb_min_available or 0
    allowed = max(0, healthy - desired)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(
            f"{gang.name}-pdb",
            gang.created,
            gang.resource_version,
            gang.namespace,
            kind="PodDisruptionBudget",
        ),
        "spec": {"minAvailable": desired, "selector": {"matchLabels": {GANG_LABEL: gang.name}}},
        "status": {
            "observedGeneration": 1,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": gang.size,
            "disruptionsAllowed": allowed,
            "conditions": [
                {
                    "type": "DisruptionAllowed",
                    "status": "True" if allowed > 0 else "False",
                    "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                    "message": "",
                    "lastTransitionTime": rfc3339(at),
                    "observedGeneration": 1,
                }
            ],
        },
    }
