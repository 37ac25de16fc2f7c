"""Planning one gang across Celery workers: topology domains in shards, the engine's winner.

The engine offers the seam (``scheduler.engine``): ``domain_shards`` deals gangweb's ranked domains
into parts, ``plan(..., domains=part)`` plans one part, ``best_plan`` picks the winner by the engine's
own ranking. Here the parts become a Celery group whose chord callback merges them.

Nothing but names travels: each shard's message holds the gang, the policy, its domain names and the
resourceVersions (per plural) the coordinator's view was at. Every worker keeps its own watch cache and
live snapshot (``runtime.get_cluster``), waits until that cache has reached those resourceVersions
(``WatchCache.wait_for_versions``), and plans its domains on its own snapshot; a cluster without a
watch cache lists afresh in each shard. Only the ``gangweb`` policy walks domains, and only clusters
of at least ``GANGWEB_FANOUT_MIN_NODES`` nodes are worth it (docs/pipeline.md, "Planning").
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from scheduler.cluster import Cluster, WatchCache
from scheduler.engine import Plan as EnginePlan
from scheduler.engine import best_plan, can_shard, domain_shards
from scheduler.engine import plan as engine_plan
from scheduler.preemption.planning import PlanResult, PodFacts, View, current_view, plan_cost, pod_facts

# How long a shard waits for its worker's cache to reach the coordinator's resourceVersions.
CATCH_UP_SECONDS = 30.0


class BehindCoordinator(RuntimeError):
    """This worker's watch cache did not reach the coordinator's resourceVersions in time."""


def shards_for(view: View, podgroup: str, policy: str) -> list[list[str | None]] | None:
    """The domain shards to plan in parallel, or None when one task is the better choice."""
    minimum = settings.GANGWEB_FANOUT_MIN_NODES
    if not can_shard(policy) or not minimum or len(view.snapshot.nodes) < minimum:
        return None
    shards = [s for s in domain_shards(view.snapshot, podgroup, settings.GANGWEB_FANOUT_PARTS, policy) if s]
    return shards if len(shards) >= 2 else None


def shard_view(cluster: Cluster, podgroup: str, versions: dict[str, str]) -> View:
    """This worker's view for a shard: its own cache, once it holds the coordinator's ``versions``."""
    if isinstance(cluster, WatchCache) and not cluster.wait_for_versions(versions, CATCH_UP_SECONDS):
        raise BehindCoordinator(f"watch cache did not reach {versions} within {CATCH_UP_SECONDS:g}s")
    return current_view(cluster, podgroup)


def plan_shard(view: View, podgroup: str, policy: str, domains: list[str | None]) -> dict[str, Any]:
    """One shard's plan, with what the merge needs: the engine's rank inputs and the ledger's facts."""
    started = time.perf_counter()
    snapshot = view.snapshot
    result = engine_plan(snapshot, podgroup, policy=policy, domains=domains)
    plan = result.to_dict()
    if view.resource_versions:
        plan["resourceVersion"] = view.resource_versions.get("pods", "")
        plan["resourceVersions"] = view.resource_versions
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
