"""GPUs allocated through DRA: devices from ResourceSlices, claims that hold them, CEL selectors,
PodGroup-level claims (KEP-5729), and what a plan says it did not model."""

import pytest

from scheduler.engine import SnapshotError, parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.dra import builders as dra

TEMPLATE_REF = [{"name": "gpus", "resourceClaimTemplateName": "gpus"}]


def _held(
    name, on, devices, *, priority=10, group=None, namespace="ml", consumers=None, claim=None, pool=None
):
    """A running pod and the claim holding ``devices`` of node ``on`` (or of ``pool``) for it."""
    claim = claim or f"{name}-gpus"
    return [
        dra.with_claims(
            pod(name, namespace=namespace, node=on, group=group, priority=priority),
            [{"name": "gpus", "resourceClaimName": claim}],
        ),
        dra.claim(
            claim,
            namespace=namespace,
            devices=[(pool or on, f"gpu-{i}") for i in devices],
            node=on,
            reserved_for=consumers or [("Pod", name)],
        ),
    ]


def _gang(count=2, gpus=4, priority=100, name="new", requests=None):
    return [
        podgroup(name, namespace="ml", priority=priority, min_count=count),
        dra.claim_template("gpus", namespace="ml", requests=requests or [dra.exact_request(count=gpus)]),
    ] + [
        dra.with_claims(pod(f"{name}-{i}", namespace="ml", group=name, priority=priority), TEMPLATE_REF)
        for i in range(count)
    ]


def _cluster(nodes=("n1", "n2"), gpus=4):
    out = [dra.device_class()]
    for n in nodes:
        out += [node(n, gpus=0), dra.resource_slice(n, gpus)]
    return out


def test_devices_held_by_lower_priority_claims_are_freed_by_evicting_their_pods():
    objects = _cluster() + _held("low-0", "n1", range(4)) + _held("low-1", "n2", range(2)) + _gang()
    snap = parse_snapshot(objects)
    assert snap.gpus(snap.alloc).tolist() == [4, 4] and snap.gpus(snap.free).tolist() == [0, 2]
    result = plan(snap, "ml/new")
    assert result.outcome == "preempt"
    assert result.evictions == ["ml/low-0", "ml/low-1"]
    assert result.evicted_gpus == 6  # DRA devices count as GPUs
    assert sorted(result.placement.values()) == ["n1", "n2"]


def test_a_gang_that_fits_on_free_devices_evicts_nothing():
    objects = _cluster(nodes=("n1", "n2", "n3")) + _held("low-0", "n1", range(4)) + _gang()
    result = plan(parse_snapshot(objects), "ml/new")
    assert result.outcome == "fits" and sorted(result.placement.values()) == ["n2", "n3"]


def test_without_resource_slices_a_gang_asking_for_devices_never_fits():
    objects = [dra.device_class(), node("n1", gpus=8)] + _gang(count=1)
    result = plan(parse_snapshot(objects), "ml/new")
    assert not result.feasible  # extended-resource GPUs are not DRA devices


def test_a_claim_shared_with_a_pod_that_stays_frees_nothing():
    shared = [("Pod", "low"), ("Pod", "high")]
    objects = (
        _cluster(nodes=("n1",))
        + _held("low", "n1", range(4), consumers=shared, claim="shared")
        + [
            dra.with_claims(
                pod("high", namespace="ml", node="n1", priority=500),
                [{"name": "gpus", "resourceClaimName": "shared"}],
            )
        ]
        + _gang(count=1)
    )
    result = plan(parse_snapshot(objects), "ml/new")
    assert not result.feasible and result.evictions == []


@pytest.fixture
def podgroup_holding_a_claim():
    """n1's four devices held by one claim reserved for PodGroup ml/low (two running pods, priority 10)
    in the given disruption mode, and a one-pod gang ml/new that needs them."""

    def build(mode):
        objects = _cluster(nodes=("n1",)) + [
            podgroup("low", namespace="ml", priority=10, mode=mode, min_count=2),
            dra.claim(
                "low-shared",
                namespace="ml",
                devices=[("n1", f"gpu-{i}") for i in range(4)],
                node="n1",
                reserved_for=[("PodGroup", "low")],
            ),
        ]
        for i in range(2):
            objects.append(
                dra.with_claims(
                    pod(f"low-{i}", namespace="ml", node="n1", group="low", priority=10),
                    [{"name": "gpus", "resourceClaimName": "low-shared"}],
                )
            )
        return parse_snapshot(objects + _gang(count=1))

    return build


def test_a_claim_reserved_for_a_podgroup_frees_when_the_whole_group_goes(podgroup_holding_a_claim):
    result = plan(podgroup_holding_a_claim("all"), "ml/new")
    assert result.outcome == "preempt" and result.evictions == ["ml/low-0", "ml/low-1"]
    assert [v.kind for v in result.victims] == ["PodGroup"]


def test_a_claim_reserved_for_a_podgroup_of_single_pods_stays_when_one_pod_goes(podgroup_holding_a_claim):
    result = plan(podgroup_holding_a_claim("single"), "ml/new")
    assert not result.feasible  # two units share the claim: no single eviction frees it


def test_cel_selectors_of_the_request_choose_the_nodes_with_matching_devices():
    big = [dra.gpu_device(i, "big", memory="80Gi") for i in range(4)]
    small = [dra.gpu_device(i, "small", product="NVIDIA A100-SXM4-40GB", memory="40Gi") for i in range(4)]
    objects = [dra.device_class(), node("big", gpus=0), node("small", gpus=0)]
    objects += [dra.resource_slice("big", devices=big), dra.resource_slice("small", devices=small)]
    selector = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('64Gi')) >= 0"
    objects += _held("low", "big", range(4)) + _gang(
        count=1, requests=[dra.exact_request(count=2, selectors=[selector])]
    )
    result = plan(parse_snapshot(objects), "ml/new")
    assert result.outcome == "preempt" and result.placement == {"ml/new-0": "big"}
    by_name = [
        dra.exact_request(
            count=1, selectors=["device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')"]
        )
    ]
    objects = objects[:-4] + _gang(count=1, requests=by_name)
    assert plan(parse_snapshot(objects), "ml/new").placement == {"ml/new-0": "small"}


def test_an_expression_the_engine_cannot_evaluate_is_named_in_the_reason():
    objects = _cluster(nodes=("n1",)) + _gang(
        count=1,
        requests=[
            dra.exact_request(count=1, selectors=["device.attributes['gpu.nvidia.com'].nosuchfield == 'x'"])
        ],
    )
    result = plan(parse_snapshot(objects), "ml/new")
    assert not result.feasible
    assert "could not be evaluated" in result.reason and "nosuchfield" in result.reason


def test_all_mode_takes_every_matching_device_of_a_node():
    objects = (
        _cluster()
        + _held("low", "n1", [0])
        + _gang(count=2, requests=[dra.exact_request(all_devices=True, count=None)])
    )
    result = plan(parse_snapshot(objects), "ml/new")
    assert result.evictions == ["ml/low"] and sorted(result.placement.values()) == ["n1", "n2"]


def test_podgroup_claim_from_a_template_needs_one_allocation_for_the_group():
    refs = [{"name": "domain", "resourceClaimTemplateName": "gpus"}]
    group = dra.with_claims(podgroup("new", namespace="ml", priority=100, min_count=2), refs)
    pods = [
        dra.with_claims(pod(f"new-{i}", namespace="ml", group="new", priority=100, node=None), refs)
        for i in range(2)
    ]
    template = dra.claim_template("gpus", namespace="ml", requests=[dra.exact_request(count=6)])
    base = _cluster() + [group, template] + pods
    fits = plan(parse_snapshot(base), "ml/new")
    assert fits.outcome == "fits"  # the group's one claim takes 6 of the 8 devices, not 6 per pod
    freeing = plan(parse_snapshot(base + _held("low", "n1", range(4))), "ml/new")
    assert freeing.outcome == "preempt" and freeing.evictions == ["ml/low"]
    blocked = plan(parse_snapshot(base + _held("high", "n1", range(4), priority=500)), "ml/new")
    assert blocked.outcome == "infeasible:device-claim"
    assert "PodGroup claim 'domain'" in blocked.reason and "ResourceClaimTemplate ml/gpus" in blocked.reason
    assert "4 free, 0 held by lower-priority units" in blocked.reason


def test_an_allocated_podgroup_claim_needs_nothing_more():
    refs = [{"name": "domain", "resourceClaimTemplateName": "gpus"}]
    group = dra.with_claims(
        podgroup("new", namespace="ml", priority=100, min_count=1), refs, {"domain": "new-domain"}
    )
    objects = _cluster(nodes=("n1",)) + [
        group,
        dra.claim_template("gpus", namespace="ml", requests=[dra.exact_request(count=4)]),
        dra.claim(
            "new-domain",
            namespace="ml",
            devices=[("n1", f"gpu-{i}") for i in range(4)],
            reserved_for=[("PodGroup", "new")],
        ),
        dra.with_claims(pod("new-0", namespace="ml", group="new", priority=100), refs),
    ]
    assert plan(parse_snapshot(objects), "ml/new").outcome == "fits"


def test_mixed_clusters_keep_extended_resource_gpus_and_dra_devices_apart():
    objects = [dra.device_class(), node("ext", gpus=8), node("dra", gpus=0), dra.resource_slice("dra", 8)]
    objects += [pod("ext-low", namespace="ml", node="ext", gpus=8, priority=10)]
    objects += [
        podgroup("classic", namespace="ml", priority=100, min_count=1),
        pod("classic-0", namespace="ml", group="classic", gpus=8, priority=100),
    ]
    objects += _gang(count=1, gpus=8)
    snap = parse_snapshot(objects)
    assert snap.gpus(snap.alloc).tolist() == [8, 8]
    assert plan(snap, "ml/new").placement == {"ml/new-0": "dra"}
    classic = plan(snap, "ml/classic")
    assert classic.evictions == ["ml/ext-low"] and classic.placement == {"ml/classic-0": "ext"}


def test_a_node_selector_that_picks_one_node_makes_its_devices_that_nodes():
    one = [dra.device_class(), node("n1", gpus=0), node("n2", gpus=0)]
    one += [
        dra.resource_slice(
            None,
            4,
            nodeSelector={
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
                ]
            },
            pool="p",
        )
    ]
    assert plan(parse_snapshot(one + _gang(count=1, gpus=1)), "ml/new").placement == {"ml/new-0": "n2"}


def test_only_the_newest_generation_of_a_pool_counts():
    objects = [
        dra.device_class(),
        node("n1", gpus=0),
        dra.resource_slice("n1", 8, generation=1),
        dra.resource_slice("n1", 2, generation=2),
    ]
    snap = parse_snapshot(objects)
    assert snap.gpus(snap.alloc).tolist() == [2]


def test_mig_partitions_are_devices_but_not_gpus():
    devices = [dra.gpu_device(0, "n1"), dra.gpu_device(0, "n1", kind="mig", memory="10Gi")]
    snap = parse_snapshot([dra.device_class(), node("n1", gpus=0), dra.resource_slice("n1", devices=devices)])
    assert snap.gpus(snap.alloc).tolist() == [1]


def test_snapshots_without_dra_objects_build_no_device_columns():
    snap = parse_snapshot([node("n1"), pod("p", node="n1", gpus=2)])
    assert snap.devices is None and not any(r.startswith("dra") for r in snap.resources)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            {
                "kind": "ResourceSlice",
                "metadata": {"name": "s"},
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p"},
                    "nodeName": "n",
                    "devices": [{"name": "x", "attributes": {"a": {"int": "7"}}}],
                },
            },
            "ResourceSlice s: spec.devices[0].attributes[a].int: expected an integer",
        ),
        (
            {
                "kind": "ResourceSlice",
                "metadata": {"name": "s"},
                "spec": {"driver": "d", "pool": {"name": "p"}, "devices": []},
            },
            "ResourceSlice s: spec: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection is required",
        ),
        (
            {
                "kind": "ResourceSlice",
                "metadata": {"name": "s"},
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p"},
                    "allNodes": True,
                    "devices": [{"name": "x", "capacity": {"memory": {"value": "1x"}}}],
                },
            },
            "ResourceSlice s: spec.devices[0].capacity[memory].value: invalid quantity '1x'",
        ),
        (
            {
                "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "ml"},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "g",
                                "exactly": {"deviceClassName": "k", "allocationMode": "All", "count": 2},
                            }
                        ]
                    }
                },
            },
            "ResourceClaim ml/c: spec.devices.requests[0].exactly.count: must not be set with allocationMode All",
        ),
        (
            {
                "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "ml"},
                "spec": {},
                "status": {
                    "allocation": {"devices": {"results": [{"request": "g", "driver": "d", "pool": "p"}]}}
                },
            },
            "ResourceClaim ml/c: status.allocation.devices.results[0].device: required",
        ),
        (
            {
                "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "ml"},
                "spec": {},
                "status": {"reservedFor": [{"resource": "pods", "name": "p"}]},
            },
            "ResourceClaim ml/c: status.reservedFor[0].uid: required",
        ),
        (
            {
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "ml"},
                "spec": {"spec": {"devices": {"requests": [{"name": "g"}]}}},
            },
            "ResourceClaimTemplate ml/t: spec.spec.devices.requests[0]: exactly one of exactly, firstAvailable is required",
        ),
        (
            {"kind": "DeviceClass", "metadata": {"name": "k"}, "spec": {"selectors": [{"cel": {}}]}},
            "DeviceClass k: spec.selectors[0].cel.expression: required",
        ),
        (
            dra.with_claims(
                pod("p"), [{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}]
            ),
            "Pod default/p: spec.resourceClaims[0]: exactly one of resourceClaimName, resourceClaimTemplateName is required",
        ),
        (
            {
                **pod("p"),
                "spec": {"containers": [{"name": "m", "resources": {"claims": [{"name": "nope"}]}}]},
            },
            "Pod default/p: spec.containers[0].resources.claims[0].name: 'nope' is not in spec.resourceClaims",
        ),
        (
            dra.with_claims(
                podgroup("g", min_count=1), [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]
            ),
            "PodGroup default/g: spec.resourceClaims: at most 4 entries, got 5",
        ),
        (
            {**podgroup("g", min_count=1), "status": {"resourceClaimStatuses": [{"resourceClaimName": "x"}]}},
            "PodGroup default/g: status.resourceClaimStatuses[0].name: required",
        ),
    ],
)
def test_malformed_dra_fields_name_the_object_and_the_field(bad, message):
    with pytest.raises(SnapshotError) as caught:
        parse_snapshot([bad])
    assert str(caught.value) == message


# -- properties: a plan replayed on the raw objects fits, and no device goes to two pods ---------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def dra_clusters(draw):
    nodes = [f"n{i}" for i in range(draw(st.integers(1, 4)))]
    objects = [dra.device_class()]
    fabric = draw(st.booleans())  # the GPUs sit in one pool every node reaches instead of on the nodes
    sizes = {}
    for n in nodes:
        sizes[n] = 0 if fabric else draw(st.integers(0, 8))
        objects += [node(n, gpus=0), dra.resource_slice(n, sizes[n])]
    free = {n: list(range(sizes[n])) for n in nodes}
    if fabric:
        free["fabric"] = list(range(draw(st.integers(0, 12))))
        objects.append(dra.resource_slice(None, len(free["fabric"]), allNodes=True, pool="fabric"))
    for i in range(draw(st.integers(0, 8))):
        n = draw(st.sampled_from(nodes))
        pool = "fabric" if fabric else n
        take = draw(st.integers(0, len(free[pool])))
        held, free[pool] = free[pool][:take], free[pool][take:]
        priority = draw(st.sampled_from([10, 50, 200]))
        shared = i > 0 and draw(st.booleans())
        consumers = [("Pod", f"low-{i}")] + ([("Pod", f"low-{i - 1}")] if shared else [])
        objects += _held(f"low-{i}", n, held, priority=priority, consumers=consumers, pool=pool)
    gang = _gang(count=draw(st.integers(1, 3)), gpus=draw(st.integers(1, 4)))
    if draw(st.booleans()):  # one claim for the whole group (KEP-5729) instead of one per pod
        for obj in gang:
            if obj["kind"] in ("PodGroup", "Pod"):
                dra.with_claims(obj, TEMPLATE_REF)
    return objects + gang


def _replay(objects, result):
    """Allocate concrete devices for the placed pods on the raw objects once the victims are gone:
    a claim is released only when all of its consumers are evicted."""
    gone = {e.split("/", 1)[1] for e in result.evictions}
    claims = [o for o in objects if o["kind"] == "ResourceClaim"]
    held = set()
    for c in claims:
        consumers = {r["name"] for r in c.get("status", {}).get("reservedFor", [])}
        if not consumers <= gone:
            results = c["status"].get("allocation", {}).get("devices", {}).get("results", [])
            held |= {(r["pool"], r["device"]) for r in results}
    slices = {
        o["spec"].get("nodeName") or o["spec"]["pool"]["name"]: [d["name"] for d in o["spec"]["devices"]]
        for o in objects
        if o["kind"] == "ResourceSlice"
    }
    shared = [("fabric", d) for d in slices.pop("fabric", []) if ("fabric", d) not in held]
    wanted = next(o for o in objects if o["kind"] == "ResourceClaimTemplate")["spec"]["spec"]["devices"][
        "requests"
    ][0]["exactly"]["count"]
    given_out = set()
    group = next(o for o in objects if o["kind"] == "PodGroup" and o["metadata"]["name"] == "new")
    if group["spec"].get("resourceClaims"):  # the group's one claim: any devices, on any node
        available = [(n, d) for n, names in slices.items() for d in names if (n, d) not in held] + shared
        assert len(available) >= wanted, f"the group claim needs {wanted}, {len(available)} free"
        return
    for pod_key, n in result.placement.items():
        available = [(n, d) for d in slices.get(n, []) if (n, d) not in held and (n, d) not in given_out]
        available += [d for d in shared if d not in given_out]  # a pool every node reaches
        assert len(available) >= wanted, f"{pod_key} on {n}: {len(available)} free device(s), needs {wanted}"
        given_out |= set(available[:wanted])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(dra_clusters())
def test_every_plan_replayed_on_the_raw_objects_gets_distinct_free_devices(objects):
    result = plan(parse_snapshot(objects), "ml/new")
    if result.feasible:
        _replay(objects, result)


def _group_claim_case(low_priority=10, low_mode="all"):
    refs = [{"name": "domain", "resourceClaimTemplateName": "gpus"}]
    group = dra.with_claims(podgroup("new", namespace="ml", priority=100, min_count=1), refs)
    pods = [dra.with_claims(pod("new-0", namespace="ml", group="new", priority=100, cpu="1"), refs)]
    template = dra.claim_template("gpus", namespace="ml", requests=[dra.exact_request(count=6)])
    objects = _cluster() + [group, template] + pods
    objects += [podgroup("low", namespace="ml", priority=low_priority, mode=low_mode, min_count=1)]
    objects += _held("low-0", "n1", range(4), priority=low_priority, group="low")
    objects += _held("other", "n2", range(2), priority=500)
    return objects


def test_a_podgroup_claim_held_by_lower_priority_units_evicts_them_first():
    result = plan(parse_snapshot(_group_claim_case()), "ml/new")
    assert result.outcome == "preempt"
    assert result.evictions == ["ml/low-0"]  # 2 free on n2 + 4 freed on n1 = 6
    assert result.reason.startswith(
        "the gang's claims need 4 device(s) for PodGroup claim 'domain', so 1 unit(s) are evicted for them first"
    )
    assert result.cost.highest_victim_priority == 10
    # The units freed for the claim are chosen least important first, not searched: not proven cheapest.
    assert result.optimality == "heuristic:unmodelled"
    assert plan(parse_snapshot(_group_claim_case()), "ml/new", "kep5710").optimality == "heuristic:policy"


def test_a_podgroup_claim_held_by_higher_priority_units_blocks_the_gang():
    result = plan(parse_snapshot(_group_claim_case(low_priority=500)), "ml/new")
    assert result.outcome == "infeasible:device-claim"
    assert "needs 6 device(s)" in result.reason and "2 free, 0 held by lower-priority units" in result.reason
