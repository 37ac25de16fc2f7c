"""Every gang on the map with gangweb's verdict beside it, and one gang's whole story.

The rows come from the live map's picture (so the reason agrees with the squares) and, for gangweb's
verdict, from the ledger: the gang's latest preemption request, its state and reason, and when it is
tried again (the request cooldown after an unsuccessful one).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Max

from gangweb.access.scope import Scope
from scheduler.preemption.models import Eviction, PreemptionRequest, RequestState

RETRIED = {RequestState.INFEASIBLE, RequestState.FAILED, RequestState.SUPERSEDED}
SORTS = {
    "waiting": lambda g: -g["waitingSeconds"],
    "priority": lambda g: -g["priority"],
    "gpus": lambda g: -g["gpus"],
    "name": lambda g: g["key"],
}
STATES = ("waiting", "partial", "running")


def verdicts(keys: list[tuple[str, str]], scope: Scope) -> dict[str, dict[str, Any]]:
    """The latest request per gang among ``keys``: state, reason, next retry (ISO time or None)."""
    if not keys:
        return {}
    namespaces = sorted({ns for ns, _ in keys})
    latest_ids = (
        scope.filter(PreemptionRequest.objects.filter(namespace__in=namespaces))
        .values("namespace", "name")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    out = {}
    wanted = {f"{ns}/{name}" for ns, name in keys}
    cooldown = timedelta(seconds=settings.GANGWEB_REQUEST_COOLDOWN_SECONDS)
    for request in PreemptionRequest.objects.filter(id__in=list(latest_ids)):
        key = f"{request.namespace}/{request.name}"
        if key not in wanted:
            continue
        done = request.finished_at or request.updated_at
        out[key] = {
            "request": request.pk,
            "state": request.state,
            "reason": request.reason,
            "mode": request.mode,
            "nextRetry": (done + cooldown).isoformat() if request.state in RETRIED and done else None,
        }
    return out


def gang_rows(picture: dict[str, Any], scope: Scope, params: dict[str, str]) -> dict[str, Any]:
    rows = [g for g in picture["gangs"] if not g.get("other") and scope.sees(g["namespace"])]
    namespaces = sorted({g["namespace"] for g in rows})
    state, namespace = params.get("state", ""), params.get("namespace", "")
    tier, search = params.get("priorityClass", ""), params.get("q", "").strip().lower()
    if state:
        rows = [g for g in rows if g["state"] == state]
    if namespace:
        rows = [g for g in rows if g["namespace"] == namespace]
    if tier:
        rows = [g for g in rows if g["priorityClass"] == tier]
    if search:
        rows = [g for g in rows if search in g["key"].lower()]
    rows.sort(key=SORTS.get(params.get("sort", ""), SORTS["waiting"]))
    found = verdicts([(g["namespace"], g["name"]) for g in rows], scope)
    return {
        "count": len(rows),
        "results": [{**g, "verdict": found.get(g["key"])} for g in rows],
        "namespaces": namespaces,
        "priorityClasses": [t["priorityClass"] for t in picture.get("tiers", [])],
        "time": picture["time"],
    }


def members(objects: list[dict[str, Any]], namespace: str, name: str) -> tuple[list, list]:
    pods, conditions = [], []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if meta.get("namespace") != namespace:
            continue
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if obj.get("kind") == "PodGroup" and meta.get("name") == name:
            conditions = list(status.get("conditions") or [])
        elif obj.get("kind") == "Pod" and (
            (spec.get("schedulingGroup") or {}).get("podGroupName") == name or meta.get("name") == name
        ):
            pods.append(
                {
                    "name": meta.get("name"),
                    "node": spec.get("nodeName") or "",
                    "phase": status.get("phase") or "",
                    "nominatedNode": status.get("nominatedNodeName") or "",
                }
            )
    pods.sort(key=lambda p: p["name"])
    return pods, conditions


def history(namespace: str, name: str) -> dict[str, list[dict[str, Any]]]:
    as_preemptor = [
        {
            "id": r.pk,
            "state": r.state,
            "mode": r.mode,
            "reason": r.reason,
            "createdAt": r.created_at.isoformat(),
            "finishedAt": r.finished_at.isoformat() if r.finished_at else None,
        }
        for r in PreemptionRequest.objects.filter(namespace=namespace, name=name).order_by("-created_at")[:50]
    ]
    victim = {}
    for e in (
        Eviction.objects.filter(victim_unit__endswith=f" {namespace}/{name}")
        .select_related("plan__request")
        .order_by("-id")[:200]
    ):
        request = e.plan.request
        row = victim.setdefault(
            e.plan_id,
            {
                "request": request.pk,
                "by": f"{request.namespace}/{request.name}",
                "state": request.state,
                "pods": 0,
                "gpus": 0,
                "evicted": 0,
                "at": e.created_at.isoformat(),
            },
        )
        row["pods"] += 1
        row["gpus"] += e.gpus
        row["evicted"] += e.state == "evicted"
    return {"asPreemptor": as_preemptor, "asVictim": list(victim.values())}
