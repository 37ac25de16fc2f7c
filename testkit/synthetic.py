"""Synthetic GPU clusters for the benchmark: real object shapes, deterministic for a seed.

``nodes`` x 8 GPUs in racks of 16 (and blocks of 16 racks); about 90 % of GPUs held by gangs of
1-64 pods in four priority tiers, a third of the groups ``disruptionMode: single``. Every node
keeps a small random hole (0-2 GPUs) so that free GPUs are scattered the way they are in busy
clusters: a whole-node (8-GPU) pod never fits without preemption. Three pending preemptors ask
for 8, 64 and 256 GPUs.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.engine.builders import node, pdb, pod, podgroup, priority_class
from scheduler.engine.gangkey import GangKey, gang_key_of

GPUS_PER_NODE = 8
RACK_SIZE = 16
BLOCK_RACKS = 16
TIERS = (100, 200, 300, 400)
PREEMPTOR_PRIORITY = 350
NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
NAMESPACE = "bench"
# (gpus, pods, topology label): the three preemptors of the benchmark.
PREEMPTORS = ((8, 1, None), (64, 8, "rack"), (256, 32, "block"))


def _stamp(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def preemptor_name(gpus: int) -> GangKey:
    return gang_key_of(NAMESPACE, f"preemptor-{gpus}")


def synthetic_cluster(nodes: int, *, seed: int = 7, fill: float = 0.9) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [priority_class(f"tier-{i}", value) for i, value in enumerate(TIERS)]
    objects.append(priority_class("preemptor", PREEMPTOR_PRIORITY))
    capacity = []
    for i in range(nodes):
        rack = i // RACK_SIZE
        objects.append(
            node(
                f"node-{i:05d}",
                gpus=GPUS_PER_NODE,
                cpu="96",
                memory="1024Gi",
                labels={"rack": f"rack-{rack:04d}", "block": f"block-{rack // BLOCK_RACKS:03d}"},
            )
        )
        capacity.append(GPUS_PER_NODE - rng.choices((0, 1, 2), (0.4, 0.4, 0.2))[0])
    target = int(nodes * GPUS_PER_NODE * fill)
    cursors: dict[int, int] = {}
    allocated, gang_id = 0, 0
    sizes, weights = (1, 2, 4, 8, 16, 32, 64), (30, 20, 15, 15, 10, 6, 4)
    while allocated < target:
        size = rng.choices(sizes, weights)[0]
        per_pod = rng.choice((1, 2, 4, 8)) if size == 1 else (8 if size >= 4 else rng.choice((4, 8)))
        placed = None
        while placed is None and per_pod >= 1:
            placed = _place(capacity, cursors, per_pod, size)
            if placed is None:  # no room left for that shape: same GPUs in smaller pods
                per_pod, size = per_pod // 2, min(size * 2, 64)
        if placed is None:
            break
        gang_id += 1
        tier = rng.randrange(len(TIERS))
        priority = TIERS[tier]
        mode = "single" if rng.random() < 1 / 3 else "all"
        name = f"job-{gang_id:06d}"
        grouped = size > 1 or rng.random() < 0.5
        started = _stamp(rng.uniform(60, 48 * 3600))
        if grouped:
            objects.append(
                podgroup(
                    name,
                    namespace=NAMESPACE,
                    min_count=size,
                    priority=priority,
                    mode=mode,
                    priority_class=f"tier-{tier}",
                )
            )
            if mode == "single" and size > 1 and gang_id % 10 == 0:
                objects.append(pdb(f"{name}-pdb", namespace=NAMESPACE, match_labels={"job": name}, allowed=1))
        for index, node_index in enumerate(placed):
            objects.append(
                pod(
                    f"{name}-{index}",
                    namespace=NAMESPACE,
                    node=f"node-{node_index:05d}",
                    gpus=per_pod,
                    cpu=str(per_pod * 10),
                    memory=f"{per_pod * 100}Gi",
                    group=name if grouped else None,
                    priority=priority,
                    labels={"job": name},
                    start=started,
                    spec={"priorityClassName": f"tier-{tier}"},
                )
            )
        allocated += per_pod * size
    for gpus, count, topology in PREEMPTORS:
        name = preemptor_name(gpus).split("/", 1)[1]
        objects.append(
            podgroup(
                name,
                namespace=NAMESPACE,
                min_count=count,
                priority=PREEMPTOR_PRIORITY,
                mode="all",
                priority_class="preemptor",
                topology=topology,
            )
        )
        for index in range(count):
            objects.append(
                pod(
                    f"{name}-{index}",
                    namespace=NAMESPACE,
                    gpus=8,
                    cpu="80",
                    memory="800Gi",
                    group=name,
                    priority=PREEMPTOR_PRIORITY,
                    created=_stamp(30),
                    start=None,
                    spec={"priorityClassName": "preemptor"},
                )
            )
    return objects


def _place(capacity: list[int], cursors: dict[int, int], per_pod: int, count: int) -> list[int] | None:
    """First fit from a per-size cursor: capacities only shrink, so nodes behind it never fit again."""
    chosen: list[int] = []
    position = cursors.get(per_pod, 0)
    while len(chosen) < count:
        while position < len(capacity) and capacity[position] < per_pod:
            position += 1
        if position >= len(capacity):
            for node_index in chosen:
                capacity[node_index] += per_pod
            return None
        capacity[position] -= per_pod
        chosen.append(position)
    cursors[per_pod] = position
    return chosen
