"""Small builders for Kubernetes objects in their real dict shapes (tests, benchmarks, demos)."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    *,
    gpus: int = 8,
    cpu: str = "64",
    memory: str = "512Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    ready: bool = True,
    cordoned: bool = False,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    allocatable.update(extra or {})
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    node: str | None = None,
    gpus: int = 0,
    cpu: str = "1",
    memory: str = "1Gi",
    group: str | None = None,
    priority: int | None = None,
    labels: dict[str, str] | None = None,
    start: str | None = "2026-07-01T00:00:00Z",
    created: str | None = None,
    uid: str | None = None,
    spec: dict[str, Any] | None = None,
    phase: str | None = None,
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    body: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}]
    }
    if node:
        body["nodeName"] = node
    if group:
        body["schedulingGroup"] = {"podGroupName": group}
    if priority is not None:
        body["priority"] = priority
    body.update(spec or {})
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels or {}),
        "uid": uid or f"uid-{namespace}-{name}",
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    if created:
        meta["creationTimestamp"] = created
    if deleting:
        meta["deletionTimestamp"] = "2026-07-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase or ("Running" if node else "Pending")}
    if node and start:
        status["startTime"] = start
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": status}


def podgroup(
    name: str,
    *,
    namespace: str = "default",
    min_count: int | None = None,
    priority: int | None = None,
    mode: str = "single",
    priority_class: str | None = None,
    preemption_policy: str | None = None,
    topology: str | None = None,
    parent: str | None = None,
    annotations: dict[str, str] | None = None,
    kind: str = "PodGroup",
) -> dict[str, Any]:
    count_field = "minCount" if kind == "PodGroup" else "minGroupCount"
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {count_field: min_count}} if min_count else {"basic": {}},
        "disruptionMode": {mode: {}},
    }
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    version = "v1beta1" if kind == "PodGroup" else "v1alpha3"
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": dict(annotations or {}),
            "uid": f"uid-{kind}-{namespace}-{name}",
        },
        "spec": spec,
    }


def pdb(
    name: str,
    *,
    namespace: str = "default",
    match_labels: dict[str, str] | None = None,
    allowed: int = 0,
    selector: Any = "labels",
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if selector == "labels":
        spec["selector"] = {"matchLabels": dict(match_labels or {})}
    elif selector is not None:
        spec["selector"] = selector
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        },
    }


def priority_class(
    name: str, value: int, *, global_default: bool = False, preemption_policy: str | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
    }
    if preemption_policy:
        obj["preemptionPolicy"] = preemption_policy
    return obj


def as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": objects}
