"""Property tests on generated clusters (hypothesis): the invariants every plan must keep."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pdb, pod, podgroup

PRIORITIES = (1, 5, 10, 50)
SETTINGS = settings(
    max_examples=int(__import__("os").environ.get("GANGWEB_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def clusters(draw):
    """Small GPU clusters: racks, groups of every disruption mode, bare pods, PDBs, one preemptor."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n_nodes = draw(st.integers(1, 6))
    objects, free = [], {}
    for i in range(n_nodes):
        gpus = rng.choice((4, 8))
        taints = [{"key": "maintenance", "effect": "NoSchedule"}] if rng.random() < 0.1 else None
        objects.append(
            node(f"n{i}", gpus=gpus, labels={"rack": f"r{i % 2}", "pool": rng.choice("ab")}, taints=taints)
        )
        free[f"n{i}"] = gpus
    names = list(free)

    def bind(gpus):
        start = rng.randrange(len(names))
        for k in range(len(names)):
            name = names[(start + k) % len(names)]
            if free[name] >= gpus:
                free[name] -= gpus
                return name
        return None

    if rng.random() < 0.3:
        objects.append(
            podgroup("root", kind="CompositePodGroup", mode="all", priority=rng.choice(PRIORITIES))
        )
    for g in range(draw(st.integers(0, 5))):
        mode = rng.choice(("all", "single"))
        parent = (
            "root" if any(o["metadata"]["name"] == "root" for o in objects) and rng.random() < 0.3 else None
        )
        priority = rng.choice(PRIORITIES)
        objects.append(podgroup(f"v{g}", mode=mode, priority=priority, min_count=1, parent=parent))
        for k in range(rng.randint(1, 4)):
            gpus = rng.choice((1, 2, 4))
            where = bind(gpus)
            if where:
                objects.append(
                    pod(
                        f"v{g}-{k}",
                        node=where,
                        gpus=gpus,
                        group=f"v{g}",
                        labels={"app": f"v{g}"},
                        start=f"2026-06-{rng.randint(1, 28):02d}T00:00:00Z",
                    )
                )
    for b in range(draw(st.integers(0, 4))):
        gpus = rng.choice((1, 2, 4, 8))
        where = bind(gpus)
        if where:
            objects.append(
                pod(
                    f"bare{b}",
                    node=where,
                    gpus=gpus,
                    priority=rng.choice(PRIORITIES),
                    labels={"app": "bare"},
                    start=f"2026-06-{rng.randint(1, 28):02d}T00:00:00Z",
                )
            )
    if rng.random() < 0.4:
        objects.append(
            pdb("guard", match_labels={"app": rng.choice(("bare", "v0", "v1"))}, allowed=rng.randint(0, 1))
        )
    count = draw(st.integers(1, 4))
    basic = rng.random() < 0.15
    objects.append(
        podgroup(
            "hi",
            min_count=None if basic else rng.randint(1, count),
            priority=rng.choice((5, 20, 100)),
            mode="all",
            topology="rack" if rng.random() < 0.3 else None,
            preemption_policy="Never" if rng.random() < 0.1 else None,
        )
    )
    gpus = rng.choice((2, 4, 8))
    ported = {
        "containers": [
            {
                "name": "c",
                "ports": [{"containerPort": 1, "hostPort": 7000}],
                "resources": {"requests": {"nvidia.com/gpu": str(gpus)}},
            }
        ]
    }
    with_ports = rng.random() < 0.15
    selective = {"nodeSelector": {"pool": "a"}} if rng.random() < 0.15 else {}
    mixed = rng.random() < 0.2
    for i in range(count):
        # Sometimes a member already runs (its rack then pins the group), every pod uses a host
        # port, the gang wants one node pool, or its pods differ in size.
        size = rng.choice((1, 2, 4, 8)) if mixed else gpus
        where = bind(size) if i == 0 and rng.random() < 0.2 else None
        spec = dict(ported if with_ports else {}, **selective)
        if with_ports:
            spec["containers"] = [
                dict(ported["containers"][0], resources={"requests": {"nvidia.com/gpu": str(size)}})
            ]
        objects.append(pod(f"hi-{i}", group="hi", gpus=size, node=where, spec=spec or None))
    if with_ports and names and rng.random() < 0.5:
        holder = rng.choice(names)
        objects.append(
            pod(
                "port-holder",
                node=holder,
                priority=rng.choice(PRIORITIES),
                cpu="0",
                memory="0",
                spec={"containers": [{"name": "c", "ports": [{"containerPort": 1, "hostPort": 7000}]}]},
            )
        )
    return objects


def _replay(snap, result, topology=True):
    policy = result.policy
    """Evict, then bind the placement: every node given a gang pod must hold everything it runs
    (dict arithmetic on the parsed objects, independent of the engine's matrices)."""
    evicted = set(result.evictions)
    used = {n.name: {"pods": 0} for n in snap.nodes}

    def add(node_name, requests):
        bucket = used[node_name]
        bucket["pods"] += 1
        for name, value in requests.items():
            bucket[name] = bucket.get(name, 0) + value

    for p in snap.pods:
        if p.node_name and p.active and p.key not in evicted and p.node_name in used:
            add(p.node_name, p.requests)
    racks = set()
    for pod_key, node_name in result.placement.items():
        p = snap.pods[snap.pod_index[pod_key]]
        n = snap.nodes[snap.node_index[node_name]]
        assert not n.taints, "placed on a tainted node"
        selector = p.node_selector
        assert all(n.labels.get(k) == v for k, v in selector.items()), (policy, "nodeSelector ignored")
        add(node_name, p.requests)
        racks.add(n.labels.get("rack"))
    for node_name in set(result.placement.values()):
        n = snap.nodes[snap.node_index[node_name]]
        for name, value in used[node_name].items():
            assert value <= n.allocatable.get(name, 0), (node_name, name, value, n.allocatable)
    group = snap.groups["default/hi"]
    if group.topology_key and topology:  # legacy is group-unaware by design
        assert len(racks) <= 1
    running = sum(1 for p in snap.pods if p.group_name == "hi" and p.node_name)
    assert running + len(result.placement) >= group.min_count or (
        group.policy == "basic" and result.placement
    )
    if group.topology_key and topology:
        pinned = {
            snap.nodes[snap.node_index[p.node_name]].labels.get("rack")
            for p in snap.pods
            if p.group_name == "hi" and p.node_name
        }
        assert not pinned or not racks or racks == pinned
    # Host ports: no two pods on a node (survivors and placed) share one.
    for node_name in set(result.placement.values()):
        ports = [
            port
            for p in snap.pods
            for port in p.host_ports
            if (p.node_name == node_name and p.active and p.key not in evicted)
            or result.placement.get(p.key) == node_name
        ]
        assert len(ports) == len(set(ports)), (policy, node_name, ports, result.placement, result.evictions)


def _top_all(snap, pod):
    group = snap.group_of(pod)
    top = None
    if group is not None:
        for ancestor in snap.ancestors(group):
            if ancestor.disruption == "all":
                top = ancestor.key
    return top


@SETTINGS
@given(clusters())
def test_plan_invariants(objects):
    snap = parse_snapshot(objects)
    preemptor = snap.effective_group_priority(snap.groups["default/hi"])
    plans = {policy: plan(snap, "default/hi", policy) for policy in ("kep5710", "gangweb", "legacy")}
    for policy, result in plans.items():
        for victim in result.victims:
            assert victim.priority < preemptor, (policy, victim)
        if result.feasible:
            _replay(snap, result, topology=policy != "legacy")
        else:
            assert result.to_dict()["evictions"] == [] and result.to_dict()["victims"] == []
    for policy in ("kep5710", "gangweb"):
        evicted = set(plans[policy].evictions)
        for p in snap.pods:
            top = _top_all(snap, p) if p.node_name and p.active else None
            if top is None:
                continue
            members = {q.key for q in snap.pods if q.node_name and q.active and _top_all(snap, q) == top}
            hit = members & evicted
            assert not hit or hit == members, f"{policy} split {top}"
    kep, ours = plans["kep5710"], plans["gangweb"]
    if kep.feasible:
        assert ours.feasible
        assert (-len(ours.placement), ours.cost) <= (-len(kep.placement), kep.cost)


@SETTINGS
@given(clusters(), st.randoms(use_true_random=False))
def test_same_input_same_plan_whatever_the_object_order(objects, rnd):
    first = parse_snapshot(objects)
    shuffled = list(objects)
    rnd.shuffle(shuffled)
    second = parse_snapshot(shuffled)
    for policy in ("kep5710", "gangweb", "legacy"):
        a = plan(first, "default/hi", policy).to_dict()
        assert a == plan(first, "default/hi", policy).to_dict()
        assert a == plan(second, "default/hi", policy).to_dict()


@SETTINGS
@given(clusters())
def test_no_eviction_when_the_gang_already_fits(objects):
    count = sum(
        1
        for o in objects
        if o["kind"] == "Pod" and o["spec"].get("schedulingGroup", {}).get("podGroupName") == "hi"
    )
    # Enough empty 8-GPU nodes in every rack for the whole gang: it fits as things are.
    extra = [
        node(f"spare-{r}-{i}", gpus=8, labels={"rack": f"r{r}", "pool": "a"})
        for r in range(2)
        for i in range(count)
    ]
    snap = parse_snapshot(objects + extra)
    for policy in ("kep5710", "gangweb", "legacy"):
        result = plan(snap, "default/hi", policy)
        assert result.feasible and result.victims == [] and result.evictions == []
