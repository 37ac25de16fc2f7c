"""kube-scheduler's DRA test cases, ported where they apply to a preemption planner.

Each case names the upstream case it follows (pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources_test.go, ``plugin:``; staging/src/k8s.io/dynamic-resource-allocation/structured/
allocator tests, ``allocator:``) and asks what a user sees of it here: the plan's outcome, and the words
of the reason where upstream's status says why. The cluster is one node ``worker`` (plus ``worker-2`` where
the case has two) and a one-pod gang ``ml/new`` at priority 100; objects are written with the fixture
builders, never copied. The table of every upstream case, ported or not and why: docs/engine.md.
"""

from __future__ import annotations

import pytest

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.dra import builders as dra

CLAIM_REF = [{"name": "gpu", "resourceClaimName": "my-claim"}]
TEMPLATE_REF = [{"name": "gpu", "resourceClaimTemplateName": "my-template"}]
REGION = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}]
}


def _gang(refs=CLAIM_REF, statuses=None, requests=None):
    member = dra.with_claims(pod("new-0", namespace="ml", group="new", priority=100), refs, statuses)
    return [
        podgroup("new", namespace="ml", priority=100, min_count=1),
        member,
        dra.claim_template("my-template", namespace="ml", requests=requests),
    ]


def _worker(devices=1, region="r1", name="worker"):
    return [node(name, gpus=0, labels={"region": region}), dra.resource_slice(name, devices)]


def _holder(priority=500, admin=False, devices=("gpu-0",)):
    """A running pod on ``worker`` whose claim holds its devices."""
    held = dra.claim(
        "other-claim",
        namespace="ml",
        devices=[("worker", d) for d in devices],
        node="worker",
        reserved_for=[("Pod", "other")],
    )
    if admin:
        for result in held["status"]["allocation"]["devices"]["results"]:
            result["adminAccess"] = True
    user = dra.with_claims(
        pod("other", namespace="ml", node="worker", priority=priority),
        [{"name": "gpu", "resourceClaimName": "other-claim"}],
    )
    return [user, held]


def _pending_claim(requests=None):
    return dra.claim("my-claim", namespace="ml", requests=requests)


def _allocated_claim():
    return dra.claim(
        "my-claim",
        namespace="ml",
        devices=[("worker", "gpu-0")],
        node="worker",
        reserved_for=[("Pod", "new-0")],
    )


def _extended_pod(requests):
    member = pod("new-0", namespace="ml", group="new", priority=100)
    member["spec"]["containers"][0]["resources"]["requests"].update(requests)
    return [podgroup("new", namespace="ml", priority=100, min_count=1), member]


def _tainted(objects):
    for obj in objects:
        if obj["kind"] == "ResourceSlice":
            for device in obj["spec"]["devices"]:
                device["taints"] = [{"key": "example.com/unhealthy", "value": "true", "effect": "NoSchedule"}]
    return objects


BROKEN_CEL = "device.attributes['gpu.nvidia.com'].healthy"
CASES = {
    # -- plugin: what the pod's claims need -----------------------------------------------------------
    "plugin: claim-reference (allocated claim)": (
        lambda: [dra.device_class()] + _worker() + [_allocated_claim()] + _gang(),
        "fits",
        "already allocated",
    ),
    "plugin: claim-template (generated claim in pod status)": (
        lambda: (
            [dra.device_class()] + _worker() + [_allocated_claim()] + _gang(TEMPLATE_REF, {"gpu": "my-claim"})
        ),
        "fits",
        None,
    ),
    "plugin: missing-claim (template, claim not generated yet: planned from the template)": (
        lambda: [dra.device_class()] + _worker() + _gang(TEMPLATE_REF),
        "fits",
        None,
    ),
    "plugin: no-resources": (
        lambda: [dra.device_class(), node("worker", gpus=0)] + [_pending_claim()] + _gang(),
        "infeasible:no-victims",
        None,
    ),
    "plugin: with-resources": (
        lambda: [dra.device_class()] + _worker() + [_pending_claim()] + _gang(),
        "fits",
        None,
    ),
    "plugin: exhausted-resources (held by a higher-priority pod)": (
        lambda: [dra.device_class()] + _worker() + _holder() + [_pending_claim()] + _gang(),
        "infeasible:no-victims",
        None,
    ),
    "plugin: exhausted-resources (held by a lower-priority pod: evicted)": (
        lambda: [dra.device_class()] + _worker() + _holder(priority=10) + [_pending_claim()] + _gang(),
        "preempt",
        None,
    ),
    "plugin: tainted-device-enabled": (
        lambda: _tainted([dra.device_class()] + _worker()) + [_pending_claim()] + _gang(),
        "infeasible:no-victims",
        None,
    ),
    "plugin: request-admin-access (exhausted, yet allocated)": (
        lambda: (
            [dra.device_class()]
            + _worker()
            + _holder()
            + [
                dra.claim(
                    "my-claim",
                    namespace="ml",
                    requests=[
                        {
                            **dra.exact_request(),
                            "exactly": {**dra.exact_request()["exactly"], "adminAccess": True},
                        }
                    ],
                )
            ]
            + _gang()
        ),
        "fits",
        None,
    ),
    "plugin: structured-ignore-allocated-admin-access": (
        lambda: [dra.device_class()] + _worker() + _holder(admin=True) + [_pending_claim()] + _gang(),
        "fits",
        None,
    ),
    "plugin: claim-parameters-CEL-runtime-error": (
        lambda: (
            [dra.device_class()]
            + _worker()
            + [_pending_claim([dra.exact_request(selectors=[BROKEN_CEL])])]
            + _gang()
        ),
        "infeasible:no-victims",
        "could not be evaluated",
    ),
    "plugin: class-parameters-CEL-runtime-error": (
        lambda: [dra.device_class(expression=BROKEN_CEL)] + _worker() + [_pending_claim()] + _gang(),
        "infeasible:no-victims",
        "could not be evaluated",
    ),
    "plugin: CEL-runtime-error-for-one-of-two-nodes": (
        lambda: (
            [dra.device_class()]
            + _worker()
            + _worker(name="worker-2")
            + [_pending_claim([dra.exact_request(selectors=[BROKEN_CEL])])]
            + _gang()
        ),
        "infeasible:no-victims",
        "could not be evaluated",
    ),
    "plugin: missing-class / claim-with-request-with-unknown-device-class": (
        lambda: _worker() + [_pending_claim([dra.exact_request(class_name="does-not-exist")])] + _gang(),
        "infeasible:no-victims",
        "DeviceClass does-not-exist is missing",
    ),
    "plugin: reserved-okay": (
        lambda: [dra.device_class()] + _worker() + [_allocated_claim()] + _gang(),
        "fits",
        None,
    ),
    "plugin: claim-with-prioritized-list (first alternative)": (
        lambda: (
            [dra.device_class()]
            + _worker()
            + [
                _pending_claim(
                    [
                        {
                            "name": "req-1",
                            "firstAvailable": [
                                {
                                    "name": "subreq-1",
                                    "deviceClassName": dra.GPU_CLASS,
                                    "allocationMode": "ExactCount",
                                    "count": 1,
                                },
                                {
                                    "name": "subreq-2",
                                    "deviceClassName": dra.GPU_CLASS,
                                    "allocationMode": "ExactCount",
                                    "count": 2,
                                },
                            ],
                        }
                    ]
                )
            ]
            + _gang()
        ),
        "fits",
        "planned with its first alternative only",
    ),
    # -- plugin: DRA extended resources -------------------------------------------------------------
    "plugin: extended-resource-name-with-node-resource (device plugin serves it)": (
        lambda: (
            [
                dra.device_class(extended_resource="example.com/gpu"),
                node("worker", extra={"example.com/gpu": "1"}),
            ]
            + _extended_pod({"example.com/gpu": "1"})
        ),
        "fits",
        None,
    ),
    "plugin: extended-resource-name-with-zero-allocatable": (
        lambda: (
            [
                dra.device_class(extended_resource="example.com/gpu"),
                node("worker", extra={"example.com/gpu": "0"}),
            ]
            + [dra.resource_slice("worker", 1)]
            + _extended_pod({"example.com/gpu": "1"})
        ),
        "fits",
        None,
    ),
    "plugin: non-DRA-extended-resource-name-with-zero-allocatable": (
        lambda: (
            [
                dra.device_class(),
                node("worker", extra={"example.com/gpu": "0"}),
                dra.resource_slice("worker", 1),
            ]
            + _extended_pod({"example.com/gpu": "1"})
        ),
        "infeasible:no-victims",
        None,
    ),
    "plugin: extended-resource-name-no-resource": (
        lambda: (
            [dra.device_class(extended_resource="example.com/gpu"), node("worker", gpus=0)]
            + _extended_pod({"example.com/gpu": "1"})
        ),
        "infeasible:no-victims",
        None,
    ),
    "plugin: implicit-extended-resource-name-with-resources": (
        lambda: (
            [dra.device_class()]
            + _worker(devices=2)
            + _extended_pod({"deviceclass.resource.kubernetes.io/gpu.nvidia.com": "2"})
        ),
        "fits",
        None,
    ),
    "plugin: extended-resource-one-device-plugin-one-dra": (
        lambda: (
            [
                dra.device_class(extended_resource="example.com/gpu"),
                dra.device_class("other.example.com", extended_resource="example.com/other"),
                node("worker", extra={"example.com/gpu": "1"}),
                dra.resource_slice("worker", 1),
            ]
            + _extended_pod({"example.com/gpu": "1", "example.com/other": "1"})
        ),
        "fits",
        None,
    ),
    # -- allocator ----------------------------------------------------------------------------------
    "allocator: network-attached-device (a pool the node's region reaches)": (
        lambda: (
            [dra.device_class(), node("worker", gpus=0, labels={"region": "r1"})]
            + [node("worker-2", gpus=0, labels={"region": "r1"})]
            + [dra.resource_slice(None, 1, pool="fabric", nodeSelector=REGION), _pending_claim()]
            + _gang()
        ),
        "fits",
        None,
    ),
    "allocator: unsuccessful-allocation-network-attached-device (another region)": (
        lambda: (
            [dra.device_class(), node("worker", gpus=0, labels={"region": "r2"})]
            + [node("worker-2", gpus=0, labels={"region": "r3"})]
            + [dra.resource_slice(None, 1, pool="fabric", nodeSelector=REGION), _pending_claim()]
            + _gang()
        ),
        "infeasible:no-victims",
        None,
    ),
    "allocator: other-node (a slice of another node only)": (
        lambda: (
            [dra.device_class(), node("worker", gpus=0)]
            + [dra.resource_slice("elsewhere", 1), _pending_claim()]
            + _gang()
        ),
        "infeasible:no-victims",
        None,
    ),
    "allocator: all-devices": (
        lambda: (
            [dra.device_class()]
            + _worker(devices=2)
            + [_pending_claim([dra.exact_request(all_devices=True, count=None)])]
            + _gang()
        ),
        "fits",
        None,
    ),
    "allocator: all-devices with one already allocated": (
        lambda: (
            [dra.device_class()]
            + _worker(devices=2)
            + _holder()
            + [_pending_claim([dra.exact_request(all_devices=True, count=None)])]
            + _gang()
        ),
        "infeasible:no-victims",
        None,
    ),
    "allocator: small-and-large (a capacity selector)": (
        lambda: (
            [dra.device_class(), node("worker", gpus=0)]
            + [
                dra.resource_slice(
                    "worker",
                    devices=[
                        dra.gpu_device(0, "worker", memory="40Gi"),
                        dra.gpu_device(1, "worker", memory="80Gi"),
                    ],
                )
            ]
            + [
                _pending_claim(
                    [
                        dra.exact_request(
                            count=2,
                            selectors=[
                                "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('64Gi')) >= 0"
                            ],
                        )
                    ]
                )
            ]
            + _gang()
        ),
        "infeasible:no-victims",
        None,
    ),
    "allocator: with-constraint (matchAttribute, not modelled)": (
        lambda: (
            [dra.device_class()]
            + _worker(devices=2)
            + [
                {
                    **_pending_claim([dra.exact_request(count=2)]),
                    "spec": {
                        "devices": {
                            "requests": [dra.exact_request(count=2)],
                            "constraints": [{"matchAttribute": "gpu.nvidia.com/productName"}],
                        }
                    },
                }
            ]
            + _gang()
        ),
        "fits",
        "matchAttribute constraints are not modelled",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_upstream_dra_case(case):
    build, outcome, words = CASES[case]
    result = plan(parse_snapshot(build()), "ml/new")
    assert result.outcome == outcome, result.reason
    if words:
        assert words in result.reason
