"""DRA extended resources (DeviceClass ``spec.extendedResourceName``): ``nvidia.com/gpu`` served by a node's
DRA devices where the node does not advertise it, beside nodes whose device plugin does."""

from __future__ import annotations

import pytest

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.dra import builders as dra

GPU = "nvidia.com/gpu"


def _gang(count=1, gpus=8, priority=100, name="new", resource=GPU):
    out = [podgroup(name, namespace="ml", priority=priority, min_count=count)]
    for i in range(count):
        member = pod(f"{name}-{i}", namespace="ml", group=name, priority=priority)
        member["spec"]["containers"][0]["resources"]["requests"][resource] = str(gpus)
        out.append(member)
    return out


def _running_on_dra(name, on, devices, priority=10):
    """A pod that asked for nvidia.com/gpu and runs on a DRA node: the claim kube-scheduler wrote for it
    holds its devices."""
    return [
        pod(name, namespace="ml", node=on, gpus=len(devices), priority=priority),
        dra.claim(
            f"{name}-extended-resources-x7k2p",
            namespace="ml",
            requests=[dra.exact_request("container-0-request-0", count=len(devices))],
            devices=[(on, f"gpu-{i}") for i in devices],
            node=on,
            extended_for=name,
        ),
    ]


def _mixed():
    """Node ``plugin`` advertises 8 nvidia.com/gpu (a device plugin); node ``dra`` publishes 8 GPUs in a
    ResourceSlice and advertises none."""
    return [
        dra.device_class(extended_resource=GPU),
        node("plugin", gpus=8),
        node("dra", gpus=0),
        dra.resource_slice("dra", 8),
    ]


def test_a_pod_asking_for_the_extended_resource_is_served_by_a_dra_only_node():
    objects = [dra.device_class(extended_resource=GPU), node("n1", gpus=0), dra.resource_slice("n1", 8)]
    snap = parse_snapshot(objects + _gang())
    assert snap.gpus(snap.alloc).tolist() == [8]
    assert plan(snap, "ml/new").placement == {"ml/new-0": "n1"}
    busy = parse_snapshot(
        _mixed() + [pod("high", namespace="ml", node="plugin", gpus=8, priority=500)] + _gang()
    )
    assert plan(busy, "ml/new").outcome == "fits" and plan(busy, "ml/new").placement == {"ml/new-0": "dra"}


def test_without_the_class_naming_it_a_dra_only_node_serves_no_extended_resource():
    objects = [dra.device_class(), node("n1", gpus=0), dra.resource_slice("n1", 8)] + _gang()
    result = plan(parse_snapshot(objects), "ml/new")
    assert not result.feasible


def test_the_implicit_name_of_every_device_class_is_served_too():
    objects = [dra.device_class(), node("n1", gpus=0), dra.resource_slice("n1", 8)]
    objects += _gang(gpus=4, resource="deviceclass.resource.kubernetes.io/gpu.nvidia.com")
    assert plan(parse_snapshot(objects), "ml/new").placement == {"ml/new-0": "n1"}


def test_mixed_cluster_evicts_from_both_kinds_of_node_and_counts_each_gpu_once():
    objects = _mixed() + [pod("low-plugin", namespace="ml", node="plugin", gpus=8, priority=10)]
    objects += _running_on_dra("low-dra", "dra", range(8))
    objects += _gang(count=2)
    snap = parse_snapshot(objects)
    assert snap.gpus(snap.alloc).tolist() == [8, 8]  # each GPU once, whichever way it is published
    assert snap.gpus(snap.free).tolist() == [0, 0]
    result = plan(snap, "ml/new")
    assert result.outcome == "preempt"
    assert result.evictions == ["ml/low-dra", "ml/low-plugin"]
    assert result.evicted_gpus == 16
    assert sorted(result.placement.values()) == ["dra", "plugin"]


def test_devices_held_by_other_claims_are_not_free_for_the_extended_resource():
    """Six of the DRA node's GPUs are held by a higher-priority pod's own claim: an 8-GPU pod fits only
    on the plugin node, whose low-priority pod goes."""
    objects = _mixed() + [pod("low-plugin", namespace="ml", node="plugin", gpus=8, priority=10)]
    objects += [
        dra.with_claims(
            pod("high", namespace="ml", node="dra", priority=500),
            [{"name": "gpus", "resourceClaimName": "high-gpus"}],
        ),
        dra.claim(
            "high-gpus",
            namespace="ml",
            devices=[("dra", f"gpu-{i}") for i in range(6)],
            node="dra",
            reserved_for=[("Pod", "high")],
        ),
    ]
    snap = parse_snapshot(objects + _gang(gpus=2, name="small") + _gang())
    assert snap.free[:, snap.resource_index[GPU]].tolist() == [2, 0]
    assert plan(snap, "ml/small").placement == {"ml/small-0": "dra"}
    result = plan(snap, "ml/new")
    assert result.evictions == ["ml/low-plugin"] and result.placement == {"ml/new-0": "plugin"}


def test_a_node_that_advertises_the_resource_is_served_by_its_device_plugin_only():
    """kube-scheduler serves a resource from DRA only where the node's allocatable lacks it."""
    objects = [dra.device_class(extended_resource=GPU), node("both", gpus=2), dra.resource_slice("both", 8)]
    snap = parse_snapshot(objects + _gang(gpus=4))
    assert snap.alloc[:, snap.resource_index[GPU]].tolist() == [2]
    assert not plan(snap, "ml/new").feasible


def test_the_classes_selectors_decide_which_devices_serve_it():
    devices = [dra.gpu_device(i, "n1", kind="mig", memory="10Gi") for i in range(7)] + [
        dra.gpu_device(7, "n1")
    ]
    objects = [
        dra.device_class(extended_resource=GPU),
        node("n1", gpus=0),
        dra.resource_slice("n1", devices=devices),
    ]
    snap = parse_snapshot(objects + _gang(gpus=2))
    assert snap.alloc[:, snap.resource_index[GPU]].tolist() == [1]  # the class takes type == 'gpu' only
    assert not plan(snap, "ml/new").feasible


@pytest.mark.parametrize("expression", ["device.attributes['gpu.nvidia.com'].nosuch == 'x'"])
def test_a_class_selector_the_engine_cannot_evaluate_is_named_in_the_reason(expression):
    objects = [
        dra.device_class(extended_resource=GPU, expression=expression),
        node("n1", gpus=0),
        dra.resource_slice("n1", 8),
    ]
    result = plan(parse_snapshot(objects + _gang()), "ml/new")
    assert not result.feasible
    assert "nvidia.com/gpu from DeviceClass gpu.nvidia.com: CEL selector" in result.reason
    assert "nosuch" in result.reason
