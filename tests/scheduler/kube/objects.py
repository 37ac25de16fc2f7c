"""Real-shaped Kubernetes objects for the kube tests (validated against the 1.37 schemas in a test)."""

from __future__ import annotations

from typing import Any


def node(name: str, gpus: int = 8) -> dict[str, Any]:
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "z1"},
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    namespace: str = "team-a",
    *,
    node: str | None = "node-1",
    group: str | None = None,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    phase: str | None = None,
    priority: int = 100,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example/train:1",
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }
        ],
        "priorityClassName": "train-high" if priority >= 1000 else "batch-low",
        "priority": priority,
    }
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    status: dict[str, Any] = {"phase": phase or ("Running" if node else "Pending")}
    if node:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": spec,
        "status": status,
    }


def podgroup(name: str, namespace: str = "team-a", min_count: int = 2, priority: int = 100) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "disruptionMode": {"all": {}},
            "priority": priority,
        },
    }


def pdb(name: str, namespace: str = "team-a", *, app: str, min_available: int | str = 1) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def small_cluster() -> list[dict[str, Any]]:
    """Two nodes, a 2-pod gang with a PDB that allows one disruption, a lone pod, a pending gang."""
    return [
        node("node-1"),
        node("node-2"),
        priority_class("batch-low", 100),
        priority_class("train-high", 1000),
        podgroup("low-gang"),
        podgroup("high-gang", priority=1000),
        pod("low-0", group="low-gang", labels={"app": "low"}),
        pod("low-1", node="node-2", group="low-gang", labels={"app": "low"}),
        pdb("low-pdb", app="low", min_available=1),
        pod("solo", labels={"app": "solo"}),
        pod("high-0", node=None, group="high-gang", priority=1000),
        pod("high-1", node=None, group="high-gang", priority=1000),
    ]


def full_cluster() -> list[dict[str, Any]]:
    """Two 2-GPU nodes, all busy with low-priority work; a 2-pod high-priority gang waits."""
    return [
        node("node-1", gpus=2),
        node("node-2", gpus=2),
        priority_class("batch-low", 100),
        priority_class("train-high", 1000),
        podgroup("low-gang"),
        podgroup("high-gang", priority=1000),
        pod("low-0", group="low-gang", labels={"app": "low"}),
        pod("low-1", node="node-2", group="low-gang", labels={"app": "low"}),
        pod("solo-1", labels={"app": "solo"}),
        pod("solo-2", node="node-2", labels={"app": "solo"}),
        pod("high-0", node=None, group="high-gang", priority=1000),
        pod("high-1", node=None, group="high-gang", priority=1000),
    ]
