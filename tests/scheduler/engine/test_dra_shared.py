"""Pods' own claims served from pools shared by several nodes (``allNodes``, ``nodeSelector``): a pod lands
where its devices can come from, and the gang never takes more of a pool than it holds."""

from __future__ import annotations

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.dra import builders as dra

TEMPLATE_REF = [{"name": "gpus", "resourceClaimTemplateName": "gpus"}]
RACK_B = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}]}


def _nodes(*names, rack="a"):
    return [node(n, gpus=0, labels={"rack": rack}) for n in names]


def _gang(count=2, gpus=2, priority=100):
    return [
        podgroup("new", namespace="ml", priority=priority, min_count=count),
        dra.claim_template("gpus", namespace="ml", requests=[dra.exact_request(count=gpus)]),
    ] + [
        dra.with_claims(pod(f"new-{i}", namespace="ml", group="new", priority=priority), TEMPLATE_REF)
        for i in range(count)
    ]


def _holder(name, devices, on, priority):
    """A running pod on ``on`` whose own claim holds ``devices`` of the shared pool ``fabric``."""
    return [
        dra.with_claims(
            pod(name, namespace="ml", node=on, priority=priority),
            [{"name": "gpus", "resourceClaimName": f"{name}-gpus"}],
        ),
        dra.claim(
            f"{name}-gpus",
            namespace="ml",
            devices=[("fabric", f"gpu-{i}") for i in devices],
            node=on,
            reserved_for=[("Pod", name)],
        ),
    ]


def _fabric(devices=4, **scope):
    return [
        dra.device_class(),
        dra.resource_slice(None, devices, pool="fabric", **(scope or {"allNodes": True})),
    ]


def test_a_pool_every_node_reaches_serves_the_gang_until_it_runs_out():
    objects = _fabric() + _nodes("n1", "n2")
    fits = plan(parse_snapshot(objects + _gang(count=2, gpus=2)), "ml/new")
    assert fits.outcome == "fits" and len(fits.placement) == 2
    short = plan(parse_snapshot(objects + _gang(count=3, gpus=2)), "ml/new")
    assert short.outcome == "infeasible:device-claim"
    assert short.reason.startswith(
        "pools shared by several nodes (3 pending pod(s)' own claims) needs 6 device(s) of DeviceClass "
        "gpu.nvidia.com for request 'gpu': 4 free, 0 held by lower-priority units"
    )


def test_one_node_never_takes_more_than_the_devices_it_reaches():
    """Two pools of 3, one per rack: 6 are free, but no node reaches the 4 one pod asks for."""
    rack_a = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}]
    }
    objects = [
        dra.device_class(),
        dra.resource_slice(None, 3, pool="fabric-a", nodeSelector=rack_a),
        dra.resource_slice(None, 3, pool="fabric-b", nodeSelector=RACK_B),
    ]
    objects += _nodes("a1", "a2") + _nodes("b1", "b2", rack="b")
    snap = parse_snapshot(objects + _gang(count=1, gpus=4))
    column = next(r for r in snap.resources if r.startswith("dra:"))
    assert snap.alloc[:, snap.resource_index[column]].tolist() == [3, 3, 3, 3]
    result = plan(snap, "ml/new")
    assert result.outcome == "infeasible:device-claim" and "needs 4 device(s)" in result.reason
    assert "3 free" in result.reason
    # Two pods of 3 could split across the racks; pools of different reach are not told apart per pod,
    # so the gang is refused rather than planned onto one rack's 3 devices twice.
    split = plan(parse_snapshot(objects + _gang(count=2, gpus=3)), "ml/new")
    assert split.outcome == "infeasible:device-claim" and "needs 6 device(s)" in split.reason


def test_a_pod_lands_only_on_nodes_the_pool_reaches():
    objects = _fabric(nodeSelector=RACK_B) + _nodes("a1", "a2") + _nodes("b1", "b2", rack="b")
    result = plan(parse_snapshot(objects + _gang(count=2, gpus=2)), "ml/new")
    assert result.outcome == "fits" and set(result.placement.values()) <= {"b1", "b2"}


def test_devices_a_lower_priority_pod_holds_are_freed_by_evicting_it_first():
    objects = (
        _fabric() + _nodes("n1", "n2") + _holder("low", [0, 1], "n1", 10) + _holder("high", [2], "n2", 500)
    )
    result = plan(parse_snapshot(objects + _gang(count=1, gpus=3)), "ml/new")
    assert result.outcome == "preempt" and result.evictions == ["ml/low"]
    assert result.reason.startswith(
        "the gang's claims need 2 device(s) for pools shared by several nodes (1 pending pod(s)' own claims), "
        "so 1 unit(s) are evicted for them first"
    )
    held = plan(parse_snapshot(objects + _gang(count=1, gpus=4)), "ml/new")
    assert (
        held.outcome == "infeasible:device-claim" and "1 free, 2 held by lower-priority units" in held.reason
    )


def test_a_pod_and_its_gang_share_the_pool_with_a_podgroup_claim_without_double_counting():
    refs = [{"name": "domain", "resourceClaimTemplateName": "gpus"}]
    objects = _fabric() + _nodes("n1", "n2") + _gang(count=1, gpus=2)
    group = next(o for o in objects if o["kind"] == "PodGroup")
    dra.with_claims(group, refs)
    member = next(o for o in objects if o["kind"] == "Pod")
    dra.with_claims(member, TEMPLATE_REF + refs)  # its own 2 devices, and the group's 2 besides
    assert plan(parse_snapshot(objects), "ml/new").outcome == "fits"
    objects[1]["spec"]["devices"] = objects[1]["spec"]["devices"][:3]
    assert plan(parse_snapshot(objects), "ml/new").outcome == "infeasible:device-claim"


def test_a_request_that_also_matches_node_local_devices_uses_those_and_says_so():
    objects = _fabric() + _nodes("n1", "n2") + [dra.resource_slice("n1", 1)] + _gang(count=1, gpus=2)
    result = plan(parse_snapshot(objects), "ml/new")
    assert not result.feasible
    assert (
        "devices of pools shared by several nodes are not counted (the request matches node-local ones)"
        in (result.reason)
    )
