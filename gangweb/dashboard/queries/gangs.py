"""One gang's whole story for its page (``dashboard/data/gangs/<ns>/<name>``): members, history, and
gangweb's verdict from the ledger (its latest request, state and reason, and when it is tried again).
The list of every gang is ``/api/v1/podgroups/`` (``gangweb/api/v1/queries/cluster.py``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Max

from gangweb.access.scope import Scope
from scheduler.preemption.models import Eviction, PreemptionRequest, RequestState

RETRIED = {RequestState.INFEASIBLE, RequestState.FAILED, RequestState.SUPERSEDED}


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
