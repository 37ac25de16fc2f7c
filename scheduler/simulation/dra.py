"""The simulated cluster on DRA (``GANGWEB_SIM_DEVICES=dra``): the same world, its GPUs published as
ResourceSlices in the NVIDIA DRA driver's shape (``gpu.nvidia.com``: productName, uuid, memory) and held
through ResourceClaims the way kube-scheduler allocates them: a claim per pod from the gang's
ResourceClaimTemplate, allocated to the very devices (slots) the binder gave the pod and reserved for it.
Nodes then advertise no ``nvidia.com/gpu``; pods ask through ``spec.resourceClaims``.

A few nodes (the last of every other rack) run their last ``MIG_GPUS`` GPUs in MIG mode, each split
into two ``3g.40gb`` partitions the driver publishes as devices of type ``mig``: the DeviceClass selects
``type == 'gpu'`` only and no simulated gang asks for a partition, so they stay free; such a node has
``GPUS_PER_NODE - MIG_GPUS`` whole GPUs (slots) for the binder and the engine alike."""

from __future__ import annotations

from typing import Any

from scheduler.engine.dra import builders as dra
from scheduler.simulation.catalog import GPU, GPU_PRODUCT, GPUS_PER_NODE, NODES_PER_RACK
from scheduler.simulation.state import SimNode, SimPod

DEVICES = ("extended", "dra")
CLAIM = "gpus"
MIG_GPUS = 2
MIG_PLACEMENTS = (0, 4)  # two 3g.40gb partitions of 4 memory slices each


def whole_gpus(node_index: int, mig: bool) -> int:
    """Whole GPUs of the simulation's node ``node_index``: fewer on its MIG nodes."""
    rack, slot = divmod(node_index, NODES_PER_RACK)
    partitioned = mig and slot == NODES_PER_RACK - 1 and rack % 2 == 0
    return GPUS_PER_NODE - MIG_GPUS if partitioned else GPUS_PER_NODE


def template_name(pod_gpus: int) -> str:
    return f"gpus-{pod_gpus}"


def node_as_dra(obj: dict[str, Any]) -> dict[str, Any]:
    status = dict(obj["status"])
    for field in ("capacity", "allocatable"):
        status[field] = {k: v for k, v in status[field].items() if k != GPU}
    return {**obj, "status": status}


def node_slice(node: SimNode) -> dict[str, Any]:
    devices = [dra.gpu_device(i, node.name, product=GPU_PRODUCT) for i in range(len(node.slots))]
    devices += [
        dra.mig_device(parent, start, node.name)
        for parent in range(len(node.slots), GPUS_PER_NODE)
        for start in MIG_PLACEMENTS
    ]
    return dra.resource_slice(node.name, devices=devices)


def pod_as_dra(obj: dict[str, Any], pod: SimPod) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The pod asking through its gang's template, and the claim holding its devices once it runs."""
    obj = {**obj, "spec": dict(obj["spec"]), "status": dict(obj.get("status", {}))}
    container = dict(obj["spec"]["containers"][0])
    resources = container["resources"]
    count = int(resources["requests"].get(GPU, 0))
    container["resources"] = {
        "requests": {k: v for k, v in resources["requests"].items() if k != GPU},
        "limits": {k: v for k, v in resources.get("limits", {}).items() if k != GPU},
    }
    obj["spec"]["containers"] = [container, *obj["spec"]["containers"][1:]]
    ref = [{"name": CLAIM, "resourceClaimTemplateName": template_name(count)}]
    if not pod.node or not pod.gpu_slots:
        return dra.with_claims(obj, ref), None
    name = f"{pod.name}-{CLAIM}"
    held = dra.claim(
        name,
        namespace=pod.namespace,
        requests=[dra.exact_request(count=count)],
        devices=[(pod.node, f"gpu-{slot}") for slot in pod.gpu_slots],
        node=pod.node,
        reserved_for=[("Pod", pod.name)],
    )
    held["status"]["reservedFor"][0]["uid"] = obj["metadata"]["uid"]
    return dra.with_claims(obj, ref, {CLAIM: name}), held


def publish(
    objects: list[dict[str, Any]], nodes: list[SimNode], pods: dict[str, SimPod]
) -> list[dict[str, Any]]:
    """A snapshot of the extended-resource world, rewritten onto DRA."""
    out: list[dict[str, Any]] = [dra.device_class()]
    templates: set[tuple[str, int]] = set()
    by_name = {n.name: n for n in nodes}
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node" and obj["metadata"]["name"] in by_name:
            out += [node_as_dra(obj), node_slice(by_name[obj["metadata"]["name"]])]
        elif kind == "Pod" and f"{obj['metadata']['namespace']}/{obj['metadata']['name']}" in pods:
            pod = pods[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"]
            shaped, held = pod_as_dra(obj, pod)
            count = int(obj["spec"]["containers"][0]["resources"]["requests"].get(GPU, 0))
            if (pod.namespace, count) not in templates:
                templates.add((pod.namespace, count))
                out.append(
                    dra.claim_template(
                        template_name(count),
                        namespace=pod.namespace,
                        requests=[dra.exact_request(count=count)],
                    )
                )
            out.append(shaped)
            if held is not None:
                out.append(held)
        else:
            out.append(obj)
    return out
