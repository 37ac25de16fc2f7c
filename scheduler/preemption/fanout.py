"""Planning one gang across Celery workers: topology domains in shards, the engine's winner.

The engine offers the seam (``scheduler.engine``): ``domain_shards`` deals gangweb's ranked domains
into parts, ``plan(..., domains=part)`` plans one part, ``best_plan`` picks the winner by the engine's
own ranking. Here the parts become a Celery group whose chord callback merges them. Each shard gets
only the objects its domains need (``scheduler.engine.subsnapshot``: a sub-snapshot, cut once in the
coordinator), compressed, under its own Redis key with an expiry. Only the ``gangweb`` policy walks
domains, and only clusters of at least ``GANGWEB_FANOUT_MIN_NODES`` nodes are worth it
(docs/pipeline.md, "Planning").

The Celery tasks keep their shape (``shards_for`` -> ``stash`` -> ``plan_shard(unstash(key), ...)`` ->
``drop``): ``shards_for`` cuts the sub-snapshots and hands them to the ``stash`` of the same objects,
and a shard finds its own sub-snapshot under the stash key by its domains.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
import zlib
from typing import Any

from django.conf import settings

from scheduler.cluster import KubeObject
from scheduler.engine import DEFAULT_POLICY, best_plan, can_shard, domain_shards, parse_snapshot
from scheduler.engine import Plan as EnginePlan
from scheduler.engine import plan as engine_plan
from scheduler.engine.subsnapshot import SnapshotCutter, parse_cut
from scheduler.preemption.planning import PlanResult, PodFacts, plan_cost, pod_facts

KEY_PREFIX = "gangweb:snapshot:"
# Longer than any chord can take (the task time limit), short enough not to hoard memory.
SNAPSHOT_TTL_SECONDS = 900
# Cuts made by ``shards_for``, waiting for ``stash`` of the same objects (same task, same process).
_CUTS: dict[int, tuple[list[KubeObject], dict[str, dict[str, Any]]]] = {}


def _redis():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL)


def _pack(value: Any) -> bytes:
    return zlib.compress(json.dumps(value, separators=(",", ":")).encode(), 1)


def _unpack(data: bytes) -> Any:
    return json.loads(zlib.decompress(data))


def shard_id(domains: list[str | None]) -> str:
    return hashlib.sha1(json.dumps(domains).encode()).hexdigest()[:16]


def deal(
    objects: list[KubeObject], podgroup: str, parts: int, policy: str = DEFAULT_POLICY
) -> tuple[list[list[str | None]], dict[str, dict]]:
    """The non-empty domain shards and each one's sub-snapshot cut, by ``shard_id``."""
    snapshot = parse_snapshot(objects)
    shards = [s for s in domain_shards(snapshot, podgroup, parts, policy) if s]
    if len(shards) < 2:
        return shards, {}
    cutter = SnapshotCutter(snapshot, objects, podgroup, policy)
    return shards, {shard_id(shard): cutter.cut(shard) for shard in shards}


def shards_for(objects: list[KubeObject], podgroup: str, policy: str) -> list[list[str | None]] | None:
    """The domain shards to plan in parallel, or None when one task is the better choice."""
    minimum = settings.GANGWEB_FANOUT_MIN_NODES
    if not can_shard(policy) or not minimum or not settings.REDIS_URL:
        return None
    if sum(1 for o in objects if o.get("kind") == "Node") < minimum:
        return None
    shards, cuts = deal(objects, podgroup, settings.GANGWEB_FANOUT_PARTS, policy)
    if len(shards) < 2:
        return None
    _CUTS.clear()
    _CUTS[id(objects)] = (objects, cuts)
    return shards


def stash(objects: list[KubeObject], cuts: dict[str, dict] | None = None) -> str:
    """Store each shard's sub-snapshot (cut by ``shards_for`` for these objects) under one key."""
    if cuts is None:
        prepared = _CUTS.pop(id(objects), None)
        if prepared is None or prepared[0] is not objects:
            raise LookupError("stash() needs the cuts of shards_for() for the same objects")
        cuts = prepared[1]
    key = f"{KEY_PREFIX}{uuid.uuid4().hex}"
    with _redis().pipeline() as pipe:
        for sid, cut in cuts.items():
            pipe.set(f"{key}:{sid}", _pack(cut), ex=SNAPSHOT_TTL_SECONDS)
        pipe.set(key, json.dumps(sorted(cuts)), ex=SNAPSHOT_TTL_SECONDS)
        pipe.execute()
    return key


class Stashed:
    """A stash key; the shard reads only its own sub-snapshot from it."""

    def __init__(self, key: str) -> None:
        self.key = key

    def cut(self, domains: list[str | None]) -> dict[str, Any]:
        data = _redis().get(f"{self.key}:{shard_id(domains)}")
        if data is None:
            raise LookupError(
                f"sub-snapshot {self.key} of {len(domains)} domain(s) expired before it was planned"
            )
        return _unpack(data)


def unstash(key: str) -> Stashed:
    return Stashed(key)


def drop(key: str) -> None:
    client = _redis()
    listed = client.get(key)
    shard_keys = [f"{key}:{sid}" for sid in json.loads(listed)] if listed else []
    client.delete(key, *shard_keys)


def plan_shard(stashed: Stashed, podgroup: str, policy: str, domains: list[str | None]) -> dict[str, Any]:
    """One shard's plan, with what the merge needs: the engine's rank inputs and the ledger's facts."""
    started = time.perf_counter()
    snapshot = parse_cut(stashed.cut(domains))
    result = engine_plan(snapshot, podgroup, policy=policy, domains=domains)
    plan = result.to_dict()
    return {
        "plan": plan,
        "domains": domains,
        # Rank inputs from the engine's own object (its placement, even for an infeasible plan).
        "rank": {
            "feasible": bool(result.feasible),
            "placement": result.placement,
            "domain": result.domain,
            "cost": list(result.cost),
        },
        "cost": plan_cost(plan, result),
        "pods": {key: [f.uid, f.node, f.gpus] for key, f in pod_facts(snapshot, plan["evictions"]).items()},
        "seconds": time.perf_counter() - started,
    }


def merge(payloads: list[dict[str, Any]], started: float) -> PlanResult:
    """The winner among the shards' plans, chosen by ``scheduler.engine.best_plan``."""
    contenders = []
    for payload in payloads:
        rank, plan = payload["rank"], payload["plan"]
        contenders.append(
            EnginePlan(
                pod_group=plan["podGroup"],
                policy=plan["policy"],
                feasible=rank["feasible"],
                reason=plan["reason"],
                placement=rank["placement"],
                domain=rank["domain"],
                cost=tuple(rank["cost"]),
            )
        )
    winner = payloads[contenders.index(best_plan(contenders))]
    pods = {key: PodFacts(*facts) for key, facts in winner["pods"].items()}
    return PlanResult(winner["plan"], winner["cost"], pods, time.time() - started)
