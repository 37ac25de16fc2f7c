"""One preemption request as a decision someone can judge: who asked, whom it evicts, the rule that
allowed it, the plans not chosen, the timeline and the ledger entries (docs/design.md "Decision view").

Rows keep their ``namespace``: ``gangweb.clusterview.redact`` takes the names of the victims of namespaces the
reader does not see and leaves their numbers (tier, GPUs, running time, lost work), which is what an
operator of one team may know of another team's victims.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from gangweb.access.scope import Scope
from gangweb.clusterview import rows as cluster_rows
from scheduler.preemption import runtime
from scheduler.preemption.models import (
    EvictionState,
    LedgerEntry,
    Mode,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)

# A victim gang whose own request opens this soon after it was evicted, and evicts others, is a cascade.
CASCADE_SECONDS = 600
LEDGER_ENTRIES = 200  # the newest entries of one request shown; a request writes a few dozen


def decision(request: PreemptionRequest, scope: Scope) -> dict[str, Any]:
    """The decision block of ``GET /api/v1/requests/{id}/`` (``request`` with its plans prefetched)."""
    plans = list(request.plans.all())
    engine = [p for p in plans if p.source == PlanSource.ENGINE]
    chosen = engine[-1] if engine else (plans[-1] if plans else None)
    entries = list(LedgerEntry.objects.filter(request=request).order_by("-id")[:LEDGER_ENTRIES])
    facts = _facts(entries, chosen)
    preemptor = _preemptor(request, scope, facts)
    victims = _victims(chosen, facts)
    top = max((v["priority"] for v in victims), default=None)
    return {
        "preemptor": preemptor,
        "rule": {
            "policy": chosen.policy if chosen else request.policy,
            "outcome": (chosen.outcome or None) if chosen else None,
            "optimality": chosen.optimality if chosen else None,
            "preemptorPriority": preemptor["priority"],
            "highestVictimPriority": top,
            "lowerPriorityOnly": None
            if top is None or preemptor["priority"] is None
            else top < preemptor["priority"],
            "pdbViolations": chosen.pdb_violations if chosen else 0,
            "reason": chosen.reason if chosen else request.reason,
        },
        "victims": victims,
        "alternatives": list(facts.get("alternatives") or []),
        "tried": [
            {
                "plan": p.pk,
                "at": p.created_at,
                "source": p.source,
                "policy": p.policy,
                "feasible": p.feasible,
                "outcome": p.outcome or None,
                "reason": p.reason,
            }
            for p in plans
        ],
        "native": runtime.native_reading().as_json() if request.mode == Mode.OBSERVE else None,
        "timeline": _timeline(request, chosen),
        "cascade": _cascade(request, chosen),
        "ledger": [
            {
                "id": e.pk,
                "kind": e.kind,
                "plan": e.plan_id,
                "namespace": e.namespace or None,
                "message": e.message,
                "createdAt": e.created_at,
            }
            for e in reversed(entries)
        ],
    }


def _facts(entries: list[LedgerEntry], chosen: Plan | None) -> dict[str, Any]:
    """The chosen plan's decision facts, as its ``plan.created`` entry keeps them ({} before they were)."""
    if chosen is None:
        return {}
    for entry in entries:
        if entry.kind == "plan.created" and entry.plan_id == chosen.pk:
            return (entry.data or {}).get("decision") or {}
    return {}


def _preemptor(request: PreemptionRequest, scope: Scope, facts: dict[str, Any]) -> dict[str, Any]:
    row = None
    try:
        found = cluster_rows.podgroup(scope, request.namespace, request.name)
    except cluster_rows.ClusterUnavailable:
        found = None
    if found is not None:
        row = found[0]
    priority = facts.get("preemptorPriority")
    return {
        "namespace": request.namespace,
        "name": request.name,
        "podGroup": request.podgroup,
        "priority": priority if priority is not None else (row["priority"] if row else None),
        "priorityClass": row["priorityClass"] if row else None,
        "state": row["state"] if row else None,
        "placedPods": row["placedPods"] if row else None,
        "pods": row["pods"] if row else None,
        "gpus": row["gpus"] if row else None,
    }


def _victims(chosen: Plan | None, facts: dict[str, Any]) -> list[dict[str, Any]]:
    if chosen is None:
        return []
    known = {(v.get("kind"), v.get("namespace"), v.get("name")): v for v in facts.get("victims") or []}
    rows = list(chosen.pod_evictions.all())
    out = []
    for victim in chosen.victims:
        kind, namespace, name = victim.get("kind", "Pod"), victim.get("namespace"), victim.get("name")
        unit = f"{kind} {namespace}/{name}"
        pods = [r for r in rows if r.victim_unit == unit]
        fact = known.get((kind, namespace, name), {})
        states = Counter(r.state for r in pods)
        out.append(
            {
                "kind": kind,
                "namespace": namespace,
                "name": name,
                "priority": victim.get("priority", 0),
                "priorityClass": fact.get("priorityClass"),
                "podCount": len(victim.get("pods") or []),
                "gpus": fact.get("gpus", sum(r.gpus for r in pods)),
                "runningSeconds": fact.get("runningSeconds"),
                "lostGpuSeconds": fact.get("lostGpuSeconds"),
                "pdbViolations": fact.get("pdbViolations", 0),
                "evictedPods": states.get(EvictionState.EVICTED, 0),
                "evictions": dict(sorted(states.items())),
            }
        )
    return out


def _timeline(request: PreemptionRequest, chosen: Plan | None) -> list[dict[str, Any]]:
    """Detection to placement, one step per thing that happened, oldest first."""
    steps = [{"step": "detected", "at": request.created_at, "detail": request.trigger}]
    if request.planned_at:
        steps.append({"step": "planned", "at": request.planned_at, "detail": ""})
    if request.decided_at and request.decider:
        steps.append({"step": "decided", "at": request.decided_at, "detail": request.decider.display})
    if request.execution_started_at:
        steps.append({"step": "evicting", "at": request.execution_started_at, "detail": ""})
    if chosen is not None and request.execution_started_at:
        done = [
            r.finished_at
            for r in chosen.pod_evictions.all()
            if r.state == EvictionState.EVICTED and r.finished_at
        ]
        if done:
            steps.append({"step": "evicted", "at": max(done), "detail": ""})
    if request.finished_at:
        step = "placed" if request.state == RequestState.SUCCEEDED else str(request.state)
        steps.append({"step": step, "at": request.finished_at, "detail": request.reason})
    elif request.is_active:
        steps.append({"step": str(request.state), "at": request.updated_at, "detail": ""})
    return sorted(steps, key=lambda s: s["at"])


def _cascade(request: PreemptionRequest, chosen: Plan | None) -> dict[str, Any]:
    """Requests this one set off (a victim gang that at once evicted others) and the one that set it off."""
    window = timedelta(seconds=CASCADE_SECONDS)
    caused: list[dict[str, Any]] = []
    if chosen is not None and request.execution_started_at:
        victims = [(v.get("namespace"), v.get("name")) for v in chosen.victims if v.get("kind") != "Pod"]
        since = request.execution_started_at
        for namespace, name in victims:
            later = PreemptionRequest.objects.filter(
                namespace=namespace,
                name=name,
                created_at__gte=since,
                created_at__lte=since + window,
                execution_started_at__isnull=False,
            ).order_by("created_at", "id")
            caused += [_link(r) for r in later[:5]]
    caused_by = None
    earlier = (
        Plan.objects.filter(
            source=PlanSource.ENGINE,
            request__execution_started_at__lte=request.created_at,
            request__execution_started_at__gte=request.created_at - window,
            pod_evictions__victim_unit=f"PodGroup {request.namespace}/{request.name}",
            pod_evictions__state=EvictionState.EVICTED,
        )
        .exclude(request=request)
        .select_related("request")
        .order_by("-request__execution_started_at")
        .distinct()
        .first()
    )
    if earlier is not None:
        caused_by = _link(earlier.request)
    return {"withinSeconds": CASCADE_SECONDS, "causedBy": caused_by, "caused": caused}


def _link(other: PreemptionRequest) -> dict[str, Any]:
    plan = other.plans.filter(source=PlanSource.ENGINE).order_by("-created_at", "-id").first()
    return {
        "request": other.pk,
        "namespace": other.namespace,
        "name": other.name,
        "state": other.state,
        "at": other.execution_started_at or other.created_at,
        "evictedPods": plan.evicted_pods if plan else 0,
    }
