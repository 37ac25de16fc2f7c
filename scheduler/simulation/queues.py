"""The simulated cluster under a queue manager (``GANGWEB_SIM_QUEUES``): the objects Kueue, Volcano,
KAI-Scheduler or YuniKorn would hold for the world, in their published shapes, so the demo's ``/queues/``
page shows queues that borrow and lend and its plans keep clear of the units a queue manager owns.

The queue manager governs the first three team namespaces (``GOVERNED``), one queue each, guaranteed
unequal parts of the cluster's GPUs (``SHARES``); the other namespaces stay outside, so gangweb still
preempts there. The world's binder places pods as before: the queue objects describe its placements
(a running gang holds quota, a waiting one waits in its queue), they do not steer them.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from scheduler.simulation.catalog import NAMESPACES

SYSTEMS = ("none", "kueue", "volcano", "kai", "yunikorn")
GOVERNED = NAMESPACES[:3]
# Each governed queue's guaranteed part of the cluster's GPUs (the rest belongs to no queue).
SHARES = (0.30, 0.20, 0.10)
GPU = "nvidia.com/gpu"
# The names each system gives its marks on pods (the queue readers in scheduler/queues/ read the same).
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_POD_GROUP_ANNOTATION = "pod-group-name"
YUNIKORN_QUEUE_LABEL = "queue"
LOCAL_QUEUE = "main"
Groups = dict[tuple[str, str], dict[str, Any]]  # (namespace, name) -> the gang's PodGroup
Members = dict[tuple[str, str], list[dict[str, Any]]]  # (namespace, name) -> the gang's pods
COHORT = "gpu-pool"


def check(system: str) -> str:
    if system not in SYSTEMS:
        raise ValueError(f"simulated queue manager must be one of {', '.join(SYSTEMS)}, got {system!r}")
    return system


def mark_pod(system: str, pod: dict[str, Any], gang_name: str) -> dict[str, Any]:
    """``pod`` as the queue manager leaves it: its queue's labels and annotations (in place)."""
    meta = pod["metadata"]
    namespace = meta.get("namespace")
    if system == "none" or namespace not in GOVERNED:
        return pod
    labels = meta.setdefault("labels", {})
    annotations = meta.setdefault("annotations", {})
    if system == "kueue":
        labels[KUEUE_QUEUE_LABEL] = LOCAL_QUEUE
        labels[KUEUE_POD_GROUP_LABEL] = gang_name
    elif system == "volcano":
        annotations[VOLCANO_GROUP_ANNOTATION] = gang_name
    elif system == "kai":
        labels[KAI_QUEUE_LABEL] = namespace
        annotations[KAI_POD_GROUP_ANNOTATION] = gang_name
    elif system == "yunikorn":
        labels[YUNIKORN_QUEUE_LABEL] = f"root.{namespace}"
    return pod


def publish(system: str, objects: list[dict[str, Any]], gpus: int, now: str) -> list[dict[str, Any]]:
    """``objects`` (the world's snapshot of ``gpus`` GPUs) with its pods marked and the queue manager's
    objects added."""
    if system == "none":
        return objects
    quotas = [max(1, math.floor(gpus * share)) for share in SHARES]
    groups: Groups = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objects
        if o["kind"] == "PodGroup"
        and o.get("apiVersion") == "scheduling.k8s.io/v1beta1"
        and o["metadata"].get("namespace") in GOVERNED
    }
    members: Members = {}
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"].get("namespace") in GOVERNED:
            gang = (
                obj["metadata"]["namespace"],
                (obj["spec"].get("schedulingGroup") or {}).get("podGroupName"),
            )
            if gang in groups:
                mark_pod(system, obj, gang[1])
                members.setdefault(gang, []).append(obj)
    build = {"kueue": _kueue, "volcano": _volcano, "kai": _kai, "yunikorn": _yunikorn}[system]
    return objects + build(quotas, groups, members, now)


def _meta(name: str, now: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": now, "uid": f"sim-{namespace or ''}-{name}"}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _requests(pod: dict[str, Any]) -> dict[str, str]:
    return dict(pod["spec"]["containers"][0]["resources"]["requests"])


def _running(pods: list[dict[str, Any]]) -> bool:
    return any(p["spec"].get("nodeName") for p in pods)


def _quantities(gpus: int) -> dict[str, str]:
    return {"cpu": str(gpus * 16), "memory": f"{gpus * 128}Gi", GPU: str(gpus)}


def _kueue(quotas: list[int], groups: Groups, members: Members, now: str) -> list[dict[str, Any]]:
    api = "kueue.x-k8s.io/v1beta2"
    out: list[dict[str, Any]] = [
        {"apiVersion": api, "kind": "ResourceFlavor", "metadata": _meta("default", now), "spec": {}},
        {"apiVersion": api, "kind": "Cohort", "metadata": _meta(COHORT, now), "spec": {}},
    ]
    for namespace, quota in zip(GOVERNED, quotas, strict=True):
        resources = [{"name": k, "nominalQuota": v} for k, v in _quantities(quota).items()]
        out.append(
            {
                "apiVersion": api,
                "kind": "ClusterQueue",
                "metadata": _meta(namespace, now),
                "spec": {
                    "cohortName": COHORT,
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": list(_quantities(0)),
                            "flavors": [{"name": "default", "resources": resources}],
                        }
                    ],
                },
            }
        )
        out.append(
            {
                "apiVersion": api,
                "kind": "LocalQueue",
                "metadata": _meta(LOCAL_QUEUE, now, namespace),
                "spec": {"clusterQueue": namespace},
            }
        )
    for (namespace, name), group in sorted(groups.items()):
        pods = members.get((namespace, name), [])
        if not pods:
            continue
        per_pod = _requests(pods[0])
        count = int(group["spec"].get("minCount") or len(pods))
        workload: dict[str, Any] = {
            "apiVersion": api,
            "kind": "Workload",
            "metadata": {**_meta(name, group["metadata"].get("creationTimestamp") or now, namespace)},
            "spec": {
                "queueName": LOCAL_QUEUE,
                "priority": int(pods[0]["spec"].get("priority") or 0),
                "active": True,
                "podSets": [
                    {
                        "name": "main",
                        "count": count,
                        "template": {
                            "spec": {
                                "containers": [{"name": "worker", "resources": {"requests": per_pod}}],
                            }
                        },
                    }
                ],
            },
        }
        if _running(pods):
            usage = {k: _times(v, count) for k, v in per_pod.items()}
            workload["status"] = {
                "admission": {
                    "clusterQueue": namespace,
                    "podSetAssignments": [
                        {
                            "name": "main",
                            "count": count,
                            "flavors": dict.fromkeys(per_pod, "default"),
                            "resourceUsage": usage,
                        }
                    ],
                },
                "conditions": [
                    _condition(
                        "QuotaReserved",
                        "True",
                        "QuotaReserved",
                        f"Quota reserved in ClusterQueue {namespace}",
                        now,
                    ),
                    _condition("Admitted", "True", "Admitted", "The workload is admitted", now),
                ],
            }
        else:
            workload["status"] = {
                "conditions": [_condition("QuotaReserved", "False", "Pending", "waiting for quota", now)]
            }
        out.append(workload)
    return out


def _times(quantity: str, count: int) -> str:
    if quantity.endswith("Gi"):
        return f"{int(quantity[:-2]) * count}Gi"
    return str(int(quantity) * count)


def _condition(type_: str, status: str, reason: str, message: str, now: str) -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}


def _volcano(quotas: list[int], groups: Groups, members: Members, now: str) -> list[dict[str, Any]]:
    api = "scheduling.volcano.sh/v1beta1"
    out: list[dict[str, Any]] = []
    for namespace, quota in zip(GOVERNED, quotas, strict=True):
        out.append(
            {
                "apiVersion": api,
                "kind": "Queue",
                "metadata": _meta(namespace, now),
                "spec": {"weight": max(1, round(quota * 10 / max(quotas))), "reclaimable": True},
                "status": {"state": "Open"},
            }
        )
    for (namespace, name), group in sorted(groups.items()):
        pods = members.get((namespace, name), [])
        out.append(
            {
                "apiVersion": api,
                "kind": "PodGroup",
                "metadata": _meta(name, group["metadata"].get("creationTimestamp") or now, namespace),
                "spec": {"minMember": int(group["spec"].get("minCount") or 1), "queue": namespace},
                "status": {"phase": "Running" if _running(pods) else "Pending"},
            }
        )
    return out


def _kai(quotas: list[int], groups: Groups, members: Members, now: str) -> list[dict[str, Any]]:
    api = "scheduling.run.ai/v2"
    out: list[dict[str, Any]] = [
        {
            "apiVersion": api,
            "kind": "Queue",
            "metadata": _meta("teams", now),
            "spec": {"resources": _kai_resources(sum(quotas), weight=1)},
        }
    ]
    for namespace, quota in zip(GOVERNED, quotas, strict=True):
        out.append(
            {
                "apiVersion": api,
                "kind": "Queue",
                "metadata": _meta(namespace, now),
                "spec": {"parentQueue": "teams", "resources": _kai_resources(quota, weight=quota)},
            }
        )
    return out


def _kai_resources(gpus: int, weight: int) -> dict[str, Any]:
    return {
        "gpu": {"quota": gpus, "limit": -1, "overQuotaWeight": weight},
        "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
    }


def _yunikorn(quotas: list[int], groups: Groups, members: Members, now: str) -> list[dict[str, Any]]:
    teams = [
        {"name": namespace, "resources": {"guaranteed": {"nvidia.com/gpu": quota}}}
        for namespace, quota in zip(GOVERNED, quotas, strict=True)
    ]
    config = {"partitions": [{"name": "default", "queues": [{"name": "root", "queues": teams}]}]}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("yunikorn-configs", now, "yunikorn"),
            "data": {"queues.yaml": yaml.safe_dump(config, sort_keys=False)},
        }
    ]
