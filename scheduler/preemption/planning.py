"""Running the engine for a preemption request, and the facts the ledger keeps about a plan.

Celery tasks stay thin: they call ``compute`` and then
``scheduler.preemption.ledger.record_plan``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from scheduler.cluster import Cluster, FreshSnapshots, KubeObject, WatchCache, object_key
from scheduler.engine import Plan as EnginePlan
from scheduler.engine import Snapshot, parse_snapshot
from scheduler.engine import plan as engine_plan
from scheduler.engine.gangkey import GangKey, split_gang_key
from scheduler.kinds import is_native
from scheduler.preemption.facts import VictimFacts


def fresh_objects(cluster: Cluster) -> list[KubeObject]:
    """Objects read from the cluster now (a relist where the adapter offers one), not a cached view."""
    objects = cluster.fresh_snapshot() if isinstance(cluster, FreshSnapshots) else cluster.snapshot_objects()
    return list(objects)


@dataclass
class PlanResult:
    plan: dict[str, Any]
    cost: dict[str, Any] = field(default_factory=dict)
    pods: dict[str, VictimFacts] = field(default_factory=dict)
    seconds: float = 0.0
    # The JSON ``cost`` block (camelCase), as the API and ``gang plan`` print it.
    json_cost: dict[str, Any] = field(default_factory=dict)
    # What the decision view shows beside the contract JSON (``decision_facts``).
    decision: dict[str, Any] = field(default_factory=dict)
    # How long each part of planning took, seconds (``View.seconds`` and the engine's): the ledger's
    # ``plan.created`` entry keeps them for the benchmark's timeline (docs/kube.md, "Figures").
    parts: dict[str, float] = field(default_factory=dict)


def pod_facts(snapshot: Snapshot, pod_keys: list[str]) -> dict[str, VictimFacts]:
    facts = {}
    for key in pod_keys:
        index = snapshot.pod_index.get(key)
        if index is None:
            continue
        pod = snapshot.pods[index]
        facts[key] = VictimFacts(
            uid=pod.uid if pod.uid != pod.key else "",
            node=pod.node_name or "",
            gpus=int(snapshot.gpus(snapshot.pod_req[index])),
            started=pod.start_time,
        )
    return facts


def plan_cost(plan: dict[str, Any], engine_result: EnginePlan) -> dict[str, Any]:
    """The docs/design.md cost order of a plan; PDB violations and lost GPU-seconds come from the engine."""
    victims = plan.get("victims") or []
    priorities = [v.get("priority", 0) for v in victims]
    return {
        "pdb_violations": int(engine_result.pdb_violations) if victims else 0,
        "max_victim_priority": max(priorities) if priorities else None,
        "victim_priority_sum": sum(priorities),
        "victim_units": len(victims),
        "lost_gpu_seconds": float(engine_result.lost_gpu_seconds) if victims else 0.0,
    }


@dataclass(frozen=True)
class View:
    """The engine's snapshot to plan on, and the resourceVersions (per plural) it holds everything up to
    ({} when it comes from a fresh list)."""

    snapshot: Snapshot
    resource_versions: dict[str, str] = field(default_factory=dict)
    # Running pods a queue manager owns (scheduler/queues/ownership.py): no victims of gangweb's plans.
    owners: dict[str, Any] = field(default_factory=dict)
    # How long its parts took to read, seconds: ``snapshot`` (the live index, waited for when not ready),
    # ``view`` (all of it).
    seconds: dict[str, float] = field(default_factory=dict)


def current_view(cluster: Cluster, gang_key: GangKey) -> View:
    """What ``gang_key``'s planning sees: the watch cache's live snapshot where there is one (no list, no
    parse of the whole snapshot), else a fresh list parsed; either with other gangs' reservations applied."""
    if isinstance(cluster, WatchCache):
        began = time.perf_counter()
        live = cluster.live_snapshot()
        versions = cluster.resource_versions()  # before the snapshot: it holds at least these
        snapshot = live.snapshot(reservation_overrides(cluster, gang_key))
        indexed = time.perf_counter() - began
        snapshot = with_lost_work(snapshot, cluster.cached_objects())
        owners = cached_queue_owners(cluster, snapshot)
        seconds = {"snapshot": indexed, "view": time.perf_counter() - began}
        return View(snapshot, versions, owners, seconds)
    objects = reserve_room(fresh_objects(cluster), gang_key)
    snapshot = with_lost_work(parse_snapshot(objects), objects)
    return View(snapshot, owners=queue_owners(objects, snapshot))


def with_lost_work(snapshot: Snapshot, objects: list[KubeObject]) -> Snapshot:
    """The snapshot (parsed from ``objects``) with the checkpoint intervals and the lost-work budget left
    this hour, per namespace and per queue (lostwork.py)."""
    from scheduler.preemption import lostwork

    allowance = lostwork.allowance(queues=lostwork.queues(objects, snapshot))
    return snapshot.with_lost_work(lostwork.intervals(), allowance)


def queue_owners(objects: list[KubeObject], snapshot: Snapshot) -> dict[str, Any]:
    """The running pods a queue manager owns, by the registry's signals (docs/queues.md)."""
    from scheduler.queues.ownership import owners_of

    return owners_of(objects, snapshot)


def cached_queue_owners(cluster: WatchCache, snapshot: Snapshot) -> dict[str, Any]:
    """``queue_owners`` read through the watch cache's index of the pods a signal could match: a pass over
    every pod was most of a plan's time at 20,000 nodes (docs/kube.md)."""
    from scheduler.queues.ownership import CONTEXT_KINDS, candidate_marks, ownership_marks

    context = cluster.cached_objects(CONTEXT_KINDS)
    pods = {
        id(pod): pod
        for mark in candidate_marks(context)
        for pod in cluster.cached_indexed("Pod", ownership_marks, mark)
    }
    return queue_owners([*context, *pods.values()], snapshot)


def reservation_overrides(cluster: WatchCache, gang_key: GangKey) -> dict[tuple[str, str], KubeObject]:
    """``reserve_room`` as overrides of a live snapshot: the reserved pods only, placed on their nodes."""
    placements = reservations(gang_key)
    if not placements:
        return {}
    reserved = [pod for key in placements if (pod := cluster.cached_get("Pod", key)) is not None]
    return {("Pod", object_key(o)): o for o in reserve_room(reserved, gang_key, placements)}


# docs/design.md's cost order, then what the plan takes away: snake_case fact -> the JSON key of ``cost``.
COST_KEYS = {
    "pdb_violations": "pdbViolations",
    "max_victim_priority": "maxVictimPriority",
    "victim_priority_sum": "victimPrioritySum",
    "victim_units": "victimUnits",
    "evicted_pods": "evictedPods",
    "evicted_gpus": "evictedGpus",
    "lost_gpu_seconds": "lostGpuSeconds",
}


def cost_json(values: dict[str, Any]) -> dict[str, Any]:
    """The ``cost`` object from snake_case values (a stored Plan's fields, or ``PlanResult.full_cost``)."""
    return {key: values.get(fact) for fact, key in COST_KEYS.items()}


def cost_block(
    plan: dict[str, Any], engine_result: EnginePlan, pods: dict[str, VictimFacts]
) -> dict[str, Any]:
    """The one ``cost`` block of the API, the CLI (``gang plan``) and the ledger's plan rows."""
    evictions = plan.get("evictions") or []
    return cost_json(
        {
            **plan_cost(plan, engine_result),
            "evicted_pods": len(evictions),
            "evicted_gpus": sum(pods[p].gpus for p in evictions if p in pods),
        }
    )


def compute(objects: list[KubeObject] | View, gang_key: GangKey, policy: str) -> PlanResult:
    """Plan in this process with the engine, timed (objects are parsed first; a ``View`` is planned on)."""
    started = time.perf_counter()
    view = objects if isinstance(objects, View) else View(parse_snapshot(objects))
    snapshot = view.snapshot
    if view.owners:
        from django.conf import settings

        from scheduler.queues.plans import plan_beside_queues

        allowed = getattr(settings, "GANGWEB_QUEUE_VICTIMS", frozenset())
        result = plan_beside_queues(snapshot, gang_key, policy, view.owners, allowed)
    else:
        result = engine_plan(snapshot, gang_key, policy=policy)
    seconds = time.perf_counter() - started
    planned = result_of(snapshot, result, seconds, view.resource_versions)
    planned.parts = {key: round(value, 4) for key, value in {**view.seconds, "engine": seconds}.items()}
    return planned


def result_of(
    snapshot: Snapshot,
    result: EnginePlan,
    seconds: float = 0.0,
    resource_versions: dict[str, str] | None = None,
) -> PlanResult:
    """The engine's plan (stamped with the resourceVersions it was made at) with its cost and the ledger's
    facts about each victim pod."""
    plan = stamp_versions(result.to_dict(), resource_versions or {})
    pods = pod_facts(snapshot, plan.get("evictions") or [])
    return PlanResult(
        plan, plan_cost(plan, result), pods, seconds, cost_block(plan, result, pods), decision_facts(result)
    )


def decision_facts(result: EnginePlan) -> dict[str, Any]:
    """The facts an operator judges a plan by that the contract JSON leaves out: the preemptor's priority,
    each victim's tier, GPUs, running time and lost work, and the cheapest plans not chosen."""
    details = result.details()
    return {
        "preemptorPriority": details["preemptorPriority"],
        "placedPods": details["placedPods"],
        "pendingPods": details["pendingPods"],
        "victims": details["victims"],
        "alternatives": list(result.stats.get("alternatives") or []),
    }


def stamp_versions(plan: dict[str, Any], versions: dict[str, str]) -> dict[str, Any]:
    """The plan JSON with the resourceVersion it was made at (docs/design.md, ``gang plan`` JSON)."""
    if versions:
        plan["resourceVersion"] = versions.get("pods", "")
        plan["resourceVersions"] = dict(versions)
    return plan


def reserve_room(
    objects: list[KubeObject], gang_key: GangKey, placements: dict[str, str] | None = None
) -> list[KubeObject]:
    """The objects as another gang's planning must see them: room gangweb just freed is taken.

    After an execution the preemptor's pods stay pending until kube-scheduler binds them. Until then
    the freed room looks free, and a second gang planned meanwhile would be given the same room. So
    for ``GANGWEB_RESERVATION_SECONDS`` after a request succeeded, its gang's still-pending pods are
    put on the nodes of its plan (a copy; the cluster is not touched), like kube-scheduler's nominated
    nodes. ``gang_key``'s own reservations are left out.
    """
    placements = reservations(gang_key) if placements is None else placements
    if not placements:
        return objects
    out = []
    for obj in objects:
        if is_native(obj, "Pod"):
            key = object_key(obj)
            spec, meta = obj.get("spec") or {}, obj.get("metadata") or {}
            if key in placements and not spec.get("nodeName") and not meta.get("deletionTimestamp"):
                obj = {**obj, "spec": {**spec, "nodeName": placements[key]}}
        out.append(obj)
    return out


def reservations(gang_key: GangKey | None) -> dict[str, str]:
    """pod key -> node of the gangs other than ``gang_key`` (None: of every gang) whose request succeeded
    within ``GANGWEB_RESERVATION_SECONDS`` (see ``reserve_room``)."""
    from django.conf import settings
    from django.utils import timezone

    from scheduler.preemption.models import Plan, PlanSource, RequestState

    since = timezone.now() - timedelta(seconds=settings.GANGWEB_RESERVATION_SECONDS)
    namespace, name = split_gang_key(gang_key) if gang_key is not None else ("", "")
    placements: dict[str, str] = {}
    recent = (
        Plan.objects.filter(
            source=PlanSource.ENGINE, request__state=RequestState.SUCCEEDED, request__finished_at__gte=since
        )
        .exclude(request__namespace=namespace, request__name=name)
        .order_by("created_at")
        .values_list("placement", flat=True)
    )
    for placement in recent:
        placements.update(placement or {})
    return placements
