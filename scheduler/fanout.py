"""Planning one gang across Celery workers: topology domains in shards, the engine's winner.

The engine offers the seam (``scheduler.engine``): ``domain_shards`` deals gangweb's ranked domains
into parts, ``plan(..., domains=part)`` plans one part, ``best_plan`` picks the winner by the engine's
own ranking. Here the parts become a Celery group whose chord callback merges them; the snapshot
travels once, compressed, through Redis. Only the ``gangweb`` policy walks domains, and only
clusters of at least ``GANGWEB_FANOUT_MIN_NODES`` nodes are worth it (docs/pipeline.md, "Planning").
"""

from __future__ import annotations

import json
import time
import uuid
import zlib
from typing import Any

from django.conf import settings

from scheduler.cluster import KubeObject
from scheduler.engine import Plan as EnginePlan, best_plan, domain_shards, parse_snapshot, plan as engine_plan
from scheduler.ledger import PodFacts
from scheduler.planning import PlanResult, plan_cost, pod_facts

KEY_PREFIX = "gangweb:snapshot:"
# Longer than any chord can take (the task time limit), short enough not to hoard memory.
SNAPSHOT_TTL_SECONDS = 900


def _redis():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL)


def shards_for(objects: list[KubeObject], podgroup: str, policy: str) -> list[list[str | None]] | None:
    """The domain shards to plan in parallel, or None when one task is the better choice."""
    minimum = settings.GANGWEB_FANOUT_MIN_NODES
    if policy != "gangweb" or not minimum or not settings.REDIS_URL:
        return None
    if sum(1 for o in objects if o.get("kind") == "Node") < minimum:
        return None
    shards = [s for s in domain_shards(parse_snapshot(objects), podgroup, settings.GANGWEB_FANOUT_PARTS) if s]
    return shards if len(shards) > 1 else None


def stash(objects: list[KubeObject]) -> str:
    key = f"{KEY_PREFIX}{uuid.uuid4().hex}"
    _redis().set(key, zlib.compress(json.dumps(objects, separators=(",", ":")).encode(), 1),
                 ex=SNAPSHOT_TTL_SECONDS)
    return key


def unstash(key: str) -> list[KubeObject]:
    data = _redis().get(key)
    if data is None:
        raise LookupError(f"snapshot {key} expired before its shard was planned")
    return json.loads(zlib.decompress(data))


def drop(key: str) -> None:
    _redis().delete(key)


def plan_shard(objects: list[KubeObject], podgroup: str, policy: str, domains: list[str | None]) -> dict[str, Any]:
    """One shard's plan, with what the merge needs: the engine's rank inputs and the ledger's facts."""
    started = time.perf_counter()
    snapshot = parse_snapshot(objects)
    result = engine_plan(snapshot, podgroup, policy=policy, domains=domains)
    plan = result.to_dict()
    return {
        "plan": plan,
        "domains": domains,
        # Rank inputs from the engine's own object (its placement, even for an infeasible plan).
        "rank": {"feasible": bool(result.feasible), "placement": result.placement, "domain": result.domain,
                 "cost": list(result.cost)},
        "cost": plan_cost(plan, result),
        "pods": {key: [f.uid, f.node, f.gpus] for key, f in pod_facts(snapshot, plan["evictions"]).items()},
        "seconds": time.perf_counter() - started,
    }


def merge(payloads: list[dict[str, Any]], started: float) -> PlanResult:
    """The winner among the shards' plans, chosen by ``scheduler.engine.best_plan``."""
    contenders = []
    for payload in payloads:
        rank, plan = payload["rank"], payload["plan"]
        contenders.append(EnginePlan(pod_group=plan["podGroup"], policy=plan["policy"], feasible=rank["feasible"],
                                     reason=plan["reason"], placement=rank["placement"], domain=rank["domain"],
                                     cost=tuple(rank["cost"])))
    winner = payloads[contenders.index(best_plan(contenders))]
    pods = {key: PodFacts(*facts) for key, facts in winner["pods"].items()}
    return PlanResult(winner["plan"], winner["cost"], pods, time.time() - started)
