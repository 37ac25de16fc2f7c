"""The simulated cluster on DRA: the same world, its GPUs as ResourceSlices and ResourceClaims."""

from __future__ import annotations

import pytest
from kubernetes_validate.utils import validate

from scheduler.cluster import of_kind
from scheduler.engine import parse_snapshot, plan
from scheduler.simulation import SimulatedCluster, SteppedClock
from scheduler.simulation.catalog import GPU


def twins(ticks: int = 30) -> tuple[SimulatedCluster, SimulatedCluster]:
    # The same hardware on both: no GPU of the DRA twin in MIG mode.
    pair = tuple(
        SimulatedCluster(nodes=32, seed=7, clock=SteppedClock(), devices=d, mig=False)
        for d in ("extended", "dra")
    )
    for _ in range(ticks):
        for cluster in pair:
            cluster.tick()
    return pair


def test_the_dra_world_publishes_slices_and_claims_and_no_extended_gpus():
    _, on_dra = twins()
    objects = on_dra.snapshot_objects()
    assert all(GPU not in n["status"]["allocatable"] for n in of_kind(objects, "Node"))
    slices = of_kind(objects, "ResourceSlice")
    assert len(slices) == 32 and slices[0]["spec"]["driver"] == "gpu.nvidia.com"
    device = slices[0]["spec"]["devices"][0]
    assert {"productName", "uuid", "type"} <= set(device["attributes"]) and "memory" in device["capacity"]
    running = [p for p in of_kind(objects, "Pod") if p["spec"].get("nodeName")]
    claims = {c["metadata"]["name"]: c for c in of_kind(objects, "ResourceClaim")}
    for pod in running:
        (status,) = pod["status"]["resourceClaimStatuses"]
        claim = claims[status["resourceClaimName"]]
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        ]
    held = [
        (r["pool"], r["device"])
        for c in claims.values()
        for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert len(held) == len(set(held))  # no device allocated twice
    # Each node publishes its GPUs as one node-local ResourceSlice (what the dashboard draws as DRA devices).
    slices = [o for o in on_dra.snapshot_objects() if o["kind"] == "ResourceSlice"]
    nodes = [o for o in on_dra.snapshot_objects() if o["kind"] == "Node"]
    assert {s["spec"]["nodeName"] for s in slices} == {n["metadata"]["name"] for n in nodes}
    assert all(s["spec"]["devices"] for s in slices)


def test_every_dra_object_shape_is_valid_for_1_37():
    _, on_dra = twins(ticks=10)
    objects = on_dra.snapshot_objects()
    by_kind = {}
    for obj in objects:
        by_kind.setdefault((obj["kind"], bool(obj.get("spec", {}).get("nodeName"))), obj)
    assert {"ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "Pod"} <= {
        k for k, _ in by_kind
    }
    for obj in by_kind.values():
        validate(obj, "1.37.0", strict=True)
    running = by_kind[("Pod", True)]["metadata"]
    fetched = on_dra.get_pod(running["namespace"], running["name"])
    assert (
        fetched["spec"]["resourceClaims"]
        and GPU not in fetched["spec"]["containers"][0]["resources"]["requests"]
    )
    validate(fetched, "1.37.0", strict=True)


def test_the_engine_sees_the_same_gpus_and_makes_the_same_plans_on_both_worlds():
    extended, on_dra = twins()
    a, b = parse_snapshot(extended.snapshot_objects()), parse_snapshot(on_dra.snapshot_objects())
    assert a.gpus(a.alloc).tolist() == b.gpus(b.alloc).tolist()
    assert a.gpus(a.free).tolist() == b.gpus(b.free).tolist()
    pending = sorted(
        {
            f"{a.pods[p].namespace}/{a.pods[p].group_name}"
            for p in range(len(a.pods))
            if not a.pods[p].node_name
        }
    )
    assert pending
    for group in pending:
        one, two = plan(a, group).to_dict(), plan(b, group).to_dict()
        assert (one["outcome"], one["evictions"]) == (two["outcome"], two["evictions"]), group


def test_unknown_device_modes_are_refused():
    with pytest.raises(ValueError, match="extended, dra"):
        SimulatedCluster(nodes=4, devices="mig")
