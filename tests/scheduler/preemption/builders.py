"""Real-shaped Kubernetes objects for pipeline tests, and an in-memory ``Cluster`` with scripted answers."""

from __future__ import annotations

import copy
import threading
import uuid
from collections import Counter
from typing import Any

from scheduler.cluster import ClusterEvent, EvictionResult, KubeObject, object_key

GPU = "nvidia.com/gpu"
T0 = "2026-11-30T08:00:00Z"
# The preemptor arrives an hour after the victims started: evicting them loses an hour of their work.
T1 = "2026-11-30T09:00:00Z"


def node(name: str, gpus: int = 8, rack: str = "rack-0") -> KubeObject:
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/rack": rack},
        },
        "spec": {},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def podgroup(
    namespace: str,
    name: str,
    *,
    min_count: int,
    priority: int,
    disruption: str = "all",
    topology_key: str | None = None,
    annotations: dict | None = None,
    preemption_policy: str | None = None,
    unschedulable: bool = False,
) -> KubeObject:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {"minCount": min_count}},
        "disruptionMode": {disruption: {}},
        "priority": priority,
    }
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    obj = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"pg/{namespace}/{name}")),
            "annotations": dict(annotations or {}),
            "creationTimestamp": T0,
        },
        "spec": spec,
        "status": {},
    }
    if unschedulable:
        obj["status"]["conditions"] = [
            {
                "type": "PodGroupInitiallyScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available",
                "lastTransitionTime": T0,
            }
        ]
    return obj


def composite(
    namespace: str,
    name: str,
    *,
    min_group_count: int | None,
    disruption: str = "all",
    parent: str | None = None,
) -> KubeObject:
    """A CompositePodGroup (KEP-6012, v1alpha3): a gang of groups with ``min_group_count``, else basic."""
    spec: dict[str, Any] = {
        "schedulingPolicy": {"basic": {}}
        if min_group_count is None
        else {"gang": {"minGroupCount": min_group_count}},
        "disruptionMode": {disruption: {}},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"cpg/{namespace}/{name}")),
            "creationTimestamp": T0,
        },
        "spec": spec,
    }


def pod(
    namespace: str,
    name: str,
    *,
    group: str | None,
    priority: int,
    gpus: int = 8,
    node_name: str | None = None,
    created: str = T0,
) -> KubeObject:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi", GPU: str(gpus)},
                    "limits": {GPU: str(gpus)},
                },
            }
        ],
        "priority": priority,
        "schedulerName": "default-scheduler",
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "creationTimestamp": created,
        },
        "spec": spec,
        "status": {"phase": "Running", "startTime": created}
        if node_name
        else {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": created,
                }
            ],
        },
    }


def small_cluster(preemptor_ns: str = "team-a") -> list[KubeObject]:
    """4 full 8-GPU nodes: a low `all` gang on node-0/1, two `single` pods on node-2/3, a pending 2x8 gang."""
    objects = [node(f"node-{i}", rack=f"rack-{i // 2}") for i in range(4)]
    objects += [
        podgroup("batch", "low", min_count=2, priority=10),
        podgroup("batch", "mid", min_count=1, priority=20, disruption="single"),
    ]
    objects += [pod("batch", f"low-{i}", group="low", priority=10, node_name=f"node-{i}") for i in range(2)]
    objects += [
        pod("batch", f"mid-{i}", group="mid", priority=20, node_name=f"node-{i + 2}") for i in range(2)
    ]
    objects += [podgroup(preemptor_ns, "train", min_count=2, priority=100, unschedulable=True)]
    objects += [pod(preemptor_ns, f"train-{i}", group="train", priority=100, created=T1) for i in range(2)]
    return objects


class FakeCluster:
    """In-memory ``Cluster``: evictions delete pods; scripted answers per pod (dry run or real)."""

    name = "fake"

    def __init__(self, objects: list[KubeObject]):
        self._lock = threading.Lock()
        self.objects = {(o["kind"], object_key(o)): copy.deepcopy(o) for o in objects}
        # pod key -> list of codes to answer next (real evictions), consumed one by one
        self.real_answers: dict[str, list[int]] = {}
        self.dry_run_answers: dict[str, int] = {}
        self.always_fail: dict[str, int] = {}
        self.calls: list[tuple[str, str]] = []  # ("dry_run"|"evict", pod key)
        self.events: list[ClusterEvent] = []
        self.disruption_targets: list[str] = []
        self.podgroup_conditions: list[tuple[str, str, str, str]] = []

    def snapshot_objects(self) -> list[KubeObject]:
        with self._lock:
            return [copy.deepcopy(o) for o in self.objects.values()]

    def get_pod(self, namespace: str, name: str) -> KubeObject | None:
        with self._lock:
            found = self.objects.get(("Pod", f"{namespace}/{name}"))
            return copy.deepcopy(found) if found else None

    def evict(
        self, namespace: str, name: str, *, uid: str | None = None, dry_run: bool = False
    ) -> EvictionResult:
        key = f"{namespace}/{name}"
        with self._lock:
            self.calls.append(("dry_run" if dry_run else "evict", key))
            if ("Pod", key) not in self.objects:
                return EvictionResult(namespace, name, 404, "not found", dry_run)
            conflict = self._uid_conflict(key, uid, dry_run)
            if conflict:
                return conflict
            if dry_run:
                code = self.dry_run_answers.get(key, 201)
            else:
                queue = self.real_answers.get(key)
                code = self.always_fail.get(key) or (queue.pop(0) if queue else 201)
            if code < 300 and not dry_run:
                del self.objects[("Pod", key)]
            message = (
                "Cannot evict pod as it would violate the pod's disruption budget." if code == 429 else ""
            )
            return EvictionResult(namespace, name, code, message if code >= 300 else "", dry_run)

    def delete_pod(self, namespace: str, name: str, *, uid: str, dry_run: bool = False) -> EvictionResult:
        key = f"{namespace}/{name}"
        with self._lock:
            self.calls.append(("dry_run_delete" if dry_run else "delete", key))
            if ("Pod", key) not in self.objects:
                return EvictionResult(namespace, name, 404, "not found", dry_run)
            conflict = self._uid_conflict(key, uid, dry_run)
            if conflict:
                return conflict
            if not dry_run:
                del self.objects[("Pod", key)]
            return EvictionResult(namespace, name, 200, "", dry_run)

    def _uid_conflict(self, key: str, uid: str | None, dry_run: bool) -> EvictionResult | None:
        actual = self.objects[("Pod", key)]["metadata"].get("uid")
        if uid and uid != actual:
            namespace, name = key.split("/")
            return EvictionResult(
                namespace,
                name,
                409,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}",
                dry_run,
            )
        return None

    def mark_disruption_target(
        self, namespace: str, name: str, message: str, *, uid: str | None = None
    ) -> None:
        self.disruption_targets.append(f"{namespace}/{name}")

    def record_event(self, event: ClusterEvent) -> None:
        self.events.append(event)

    def set_podgroup_condition(self, namespace, name, type_, status, reason, message) -> None:
        self.podgroup_conditions.append((f"{namespace}/{name}", type_, status, reason))

    def annotate(
        self, api_version: str, kind: str, namespace: str, name: str, annotations: dict[str, str | None]
    ) -> bool:
        with self._lock:
            found = self.objects.get((kind, f"{namespace}/{name}"))
            if found is None:
                return False
            current = found.setdefault("metadata", {}).setdefault("annotations", {})
            for key, value in annotations.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            return True

    def get_object(self, api_version: str, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        with self._lock:
            found = self.objects.get((kind, f"{namespace}/{name}" if namespace else name))
            return copy.deepcopy(found) if found and found.get("apiVersion") == api_version else None

    def create_object(self, obj: KubeObject) -> bool:
        key = (obj["kind"], object_key(obj))
        with self._lock:
            if key in self.objects:
                return False
            self.objects[key] = copy.deepcopy(obj)
            return True

    def evictions_of(self, kind: str = "evict") -> Counter:
        return Counter(key for k, key in self.calls if k == kind)

    def remove_pod(self, key: str) -> None:
        with self._lock:
            del self.objects[("Pod", key)]
