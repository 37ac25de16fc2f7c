"""Builders for DRA objects in their real ``resource.k8s.io/v1`` shapes, as the NVIDIA DRA driver
publishes them (``gpu.nvidia.com``: productName, uuid, type, memory capacity). For tests, benchmarks,
the simulated cluster and demos; ``scheduler/engine/builders.py`` has the other kinds."""

from __future__ import annotations

import uuid
from typing import Any

from .objects import EXTENDED_RESOURCE_CLAIM

API = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
GPU_SELECTOR = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"


def device_class(
    name: str = GPU_CLASS, *, expression: str = GPU_SELECTOR, extended_resource: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    if extended_resource:
        spec["extendedResourceName"] = extended_resource
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def gpu_device(
    index: int,
    node: str,
    *,
    product: str = "NVIDIA H100 80GB HBM3",
    memory: str = "80Gi",
    kind: str = "gpu",
) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}" if kind == "gpu" else f"gpu-{index}-mig",
        "attributes": {
            "type": {"string": kind},
            "productName": {"string": product},
            "uuid": {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{index}/{kind}')}"},
            "index": {"int": index},
            "driverVersion": {"version": "580.65.6"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index:02x}"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def mig_device(
    parent: int, start: int, node: str, *, profile: str = "3g.40gb", profile_id: int = 9, size: int = 4
) -> dict[str, Any]:
    """One MIG partition of GPU ``parent`` as the NVIDIA driver publishes it once the GPU is in MIG mode: a
    device of its own, ``type`` ``mig``, named after its parent, profile and placement (the whole GPU is
    then no longer published). ``start``/``size`` are its placement in memory slices (8 on an H100)."""
    parent_uuid = f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{parent}/gpu')}"
    return {
        "name": f"gpu-{parent}-mig-{profile_id}-{start}-{size}",
        "attributes": {
            "type": {"string": "mig"},
            "profile": {"string": profile},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "uuid": {"string": f"MIG-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{parent}/{start}')}"},
            "parentUUID": {"string": parent_uuid},
            "parentIndex": {"int": parent},
            "driverVersion": {"version": "580.65.6"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{parent:02x}"},
        },
        "capacity": {"memory": {"value": f"{10 * size}Gi"}, "multiprocessors": {"value": str(15 * size)}},
    }


def resource_slice(
    node: str | None,
    gpus: int = 8,
    *,
    devices: list[dict[str, Any]] | None = None,
    generation: int = 1,
    **scope: Any,
) -> dict[str, Any]:
    """A node-local slice (``node``), or one of a pool reachable from several nodes: pass ``node=None``
    with ``allNodes=True`` or ``nodeSelector={...}``."""
    pool = node or scope.pop("pool", "shared")
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
        "devices": devices if devices is not None else [gpu_device(i, pool) for i in range(gpus)],
    }
    if node:
        spec["nodeName"] = node
    spec.update(scope)
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{pool}-{DRIVER}-{generation}"},
        "spec": spec,
    }


def exact_request(
    name: str = "gpu",
    *,
    count: int | None = 1,
    class_name: str = GPU_CLASS,
    selectors: list[str] | None = None,
    all_devices: bool = False,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": class_name}
    if all_devices:
        exactly["allocationMode"] = "All"
    else:
        exactly["allocationMode"] = "ExactCount"
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim_spec(requests: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"devices": {"requests": requests or [exact_request()]}}


def claim_template(
    name: str, *, namespace: str = "default", requests: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": claim_spec(requests)},
    }


def claim(
    name: str,
    *,
    namespace: str = "default",
    requests: list[dict[str, Any]] | None = None,
    devices: list[tuple[str, str]] | None = None,
    node: str | None = None,
    reserved_for: list[tuple[str, str]] | None = None,
    extended_for: str | None = None,
) -> dict[str, Any]:
    """A claim; ``devices`` [(pool, device)] allocated (on ``node``), reserved for [(kind, name)]
    consumers (``Pod`` or ``PodGroup``). ``extended_for``: the claim kube-scheduler writes for a pod
    whose extended resource a DeviceClass serves (annotated, owned by the pod, reserved for it)."""
    body: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-claim-{namespace}-{name}"},
        "spec": claim_spec(requests),
    }
    if extended_for:
        body["metadata"]["annotations"] = {EXTENDED_RESOURCE_CLAIM: "true"}
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": extended_for,
                "uid": f"uid-{namespace}-{extended_for}",
                "controller": True,
            }
        ]
        reserved_for = reserved_for or [("Pod", extended_for)]
    status: dict[str, Any] = {}
    if devices:
        status["allocation"] = {
            "devices": {
                "results": [
                    {
                        "request": (requests or [exact_request()])[0]["name"],
                        "driver": DRIVER,
                        "pool": pool,
                        "device": device,
                    }
                    for pool, device in devices
                ]
            },
            "allocationTimestamp": "2026-07-01T00:00:00Z",
        }
        if node:
            status["allocation"]["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
    if reserved_for:
        status["reservedFor"] = [
            {"resource": "pods", "name": n, "uid": f"uid-{namespace}-{n}"}
            if kind == "Pod"
            else {
                "apiGroup": "scheduling.k8s.io",
                "resource": "podgroups",
                "name": n,
                "uid": f"uid-PodGroup-{namespace}-{n}",
            }
            for kind, n in reserved_for
        ]
    if status:
        body["status"] = status
    return body


def with_claims(
    obj: dict[str, Any], refs: list[dict[str, str]], statuses: dict[str, str] | None = None
) -> dict[str, Any]:
    """Give a pod (its first container uses every claim) or a PodGroup ``spec.resourceClaims``:
    ``refs`` like ``{"name": "gpus", "resourceClaimTemplateName": "t"}``; ``statuses`` name -> claim."""
    obj["spec"]["resourceClaims"] = refs
    if obj["kind"] == "Pod":
        obj["spec"]["containers"][0]["resources"]["claims"] = [{"name": r["name"]} for r in refs]
    if statuses:
        obj.setdefault("status", {})["resourceClaimStatuses"] = [
            {"name": k, "resourceClaimName": v} for k, v in statuses.items()
        ]
    return obj


GPU_RESOURCE = "nvidia.com/gpu"


def as_dra(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same cluster with its ``nvidia.com/gpu`` GPUs published as DRA devices instead: a ResourceSlice
    per GPU node, a DeviceClass, one template per GPU count, every running GPU pod holding its devices
    through a claim generated from the template and reserved for it, every pending one naming the template.
    What the benchmark and the simulated cluster use (``GANGWEB_SIM_DEVICES=dra``)."""
    out: list[dict[str, Any]] = [device_class()]
    next_device: dict[str, int] = {}
    templates: set[tuple[str, str]] = set()
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node":
            gpus = int(obj["status"]["allocatable"].get(GPU_RESOURCE, 0))
            obj = {**obj, "status": {**obj["status"]}}
            for field in ("allocatable", "capacity"):
                if field in obj["status"]:
                    obj["status"][field] = {
                        k: v for k, v in obj["status"][field].items() if k != GPU_RESOURCE
                    }
            out.append(obj)
            if gpus:
                out.append(resource_slice(obj["metadata"]["name"], gpus))
            continue
        if kind != "Pod":
            out.append(obj)
            continue
        count = 0
        spec = {**obj["spec"], "containers": []}
        for container in obj["spec"]["containers"]:
            requests = dict(container.get("resources", {}).get("requests", {}))
            count += int(requests.pop(GPU_RESOURCE, 0))
            spec["containers"].append(
                {**container, "resources": {**container.get("resources", {}), "requests": requests}}
            )
        obj = {**obj, "spec": spec, "status": dict(obj.get("status", {}))}
        if not count:
            out.append(obj)
            continue
        meta = obj["metadata"]
        namespace, template = meta.get("namespace", "default"), f"gpus-{count}"
        if (namespace, template) not in templates:
            templates.add((namespace, template))
            out.append(claim_template(template, namespace=namespace, requests=[exact_request(count=count)]))
        ref = [{"name": "gpus", "resourceClaimTemplateName": template}]
        node = spec.get("nodeName")
        if node:
            generated = f"{meta['name']}-gpus"
            first = next_device.get(node, 0)
            next_device[node] = first + count
            held = claim(
                generated,
                namespace=namespace,
                requests=[exact_request(count=count)],
                devices=[(node, f"gpu-{i}") for i in range(first, first + count)],
                node=node,
                reserved_for=[("Pod", meta["name"])],
            )
            held["status"]["reservedFor"][0]["uid"] = meta.get("uid", held["status"]["reservedFor"][0]["uid"])
            out.append(held)
            out.append(with_claims(obj, ref, {"gpus": generated}))
        else:
            out.append(with_claims(obj, ref))
    return out
