"""The fan-out seam of the engine: each shard of the domain walk plans like the whole walk limited to its
domains, and the best of the shards' plans is the in-process plan (or a cheaper one the in-process walk gave
up before reaching)."""

from __future__ import annotations

import re

import pytest

from scheduler.engine import best_plan, domain_shards, parse_snapshot, plan
from scheduler.engine.synthetic import preemptor_name, synthetic_cluster
from tests.scheduler.engine.entangled import entangled_cluster

COUNTS = re.compile(r"cheapest of \d+ candidate plans? over \d+ domains?")

# (generator, nodes, seed, preemptor GPUs): racks of 16 nodes for 64 GPUs, blocks of 256 for 256.
CASES = [
    ("synthetic", 512, 3, 64),
    ("synthetic", 1024, 4, 256),
    ("entangled", 512, 6, 64),
    ("entangled", 1024, 9, 256),
]


@pytest.mark.parametrize("kind, nodes, seed, gpus", CASES)
def test_the_best_of_the_shards_plans_is_the_in_process_plan(kind, nodes, seed, gpus):
    objects = synthetic_cluster(nodes, seed=seed) if kind == "synthetic" else entangled_cluster(nodes, seed)
    whole = parse_snapshot(objects)
    podgroup_name = preemptor_name(gpus)
    shards = [s for s in domain_shards(whole, podgroup_name, 3) if s]
    assert len(shards) > 1, "the case must spread over several shards"
    merged_plan = best_plan([plan(whole, podgroup_name, "gangweb", domains=shard) for shard in shards])
    merged, in_process = merged_plan.to_dict(), plan(whole, podgroup_name, "gangweb")
    assert in_process.feasible and in_process.victims, "the case must need preemption"
    if merged["domain"] != in_process.domain:
        # The one way the fan-out departs from one process: the in-process walk gave up (PATIENCE
        # domains in a row without a better plan) before the domain where a shard found a cheaper one.
        evaluated = int(re.search(r"over (\d+) domains?", in_process.reason).group(1))
        ranked = domain_shards(whole, podgroup_name, 1)[0]
        assert ranked.index(merged["domain"]) >= evaluated
        assert best_plan([in_process, merged_plan]) is merged_plan and merged_plan.rank < in_process.rank
        return
    expected = in_process.to_dict()
    # The reason counts the candidates the deciding shard looked at, not every shard's.
    assert COUNTS.sub("", merged.pop("reason")) == COUNTS.sub("", expected.pop("reason"))
    assert merged == expected
