"""What if? The three policies' plans for one gang, side by side, each with a small map of its victims.

On the live cluster (with the room gangweb just freed held for the gangs it freed it for, as the
pipeline plans) or on an uploaded ``kubectl get ... -o yaml`` dump (the snapshot contract of
docs/design.md, read within the same bounds as ``gang plan``). Nothing is executed or recorded.
"""

from __future__ import annotations

import time
from typing import Any, BinaryIO

from gangweb.access.scope import Scope
from gangweb.dashboard.picture import build_picture
from scheduler.engine import DEFAULT_POLICY, POLICIES
from scheduler.engine.reading import read_snapshot
from scheduler.preemption import planning
from scheduler.words import plural

OTHER_GANG = "a gang of another namespace"


def flatten(documents: list[Any]) -> list[dict[str, Any]]:
    out, stack = [], list(reversed(documents))
    while stack:
        doc = stack.pop()
        if isinstance(doc, list):
            stack.extend(reversed(doc))
        elif isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
            stack.extend(reversed(doc.get("items") or []))
        elif isinstance(doc, dict):
            out.append(doc)
    return out


def read_upload(stream: BinaryIO) -> list[dict[str, Any]]:
    """Objects of an uploaded dump; ``SnapshotError`` says what is wrong with it."""
    return flatten(read_snapshot(stream))


def gangs_of(objects: list[dict[str, Any]], scope: Scope | None = None) -> list[dict[str, Any]]:
    picture = build_picture(objects, now=time.time(), cluster="upload")
    rows = [g for g in picture["gangs"] if scope is None or scope.sees(g["namespace"])]
    rows.sort(key=lambda g: (g["state"] == "running", -g["priority"], g["key"]))
    return [
        {"key": g["key"], "state": g["state"], "priorityClass": g["priorityClass"], "gpus": g["gpus"]}
        for g in rows
    ]


def _small_map(picture: dict[str, Any], plan: dict[str, Any], facts: dict, pod_gpus: int) -> list[dict]:
    victims_on: dict[str, int] = {}
    for fact in facts.values():
        victims_on[fact.node] = victims_on.get(fact.node, 0) + fact.gpus
    placed_on: dict[str, int] = {}
    for node in (plan.get("placement") or {}).values():
        placed_on[node] = placed_on.get(node, 0) + pod_gpus
    out = []
    for node in picture["nodes"]:
        name = node["name"]
        if name not in victims_on and name not in placed_on:
            continue
        held = sum(1 for o in node["gpus"] if o is not None)
        victim = min(victims_on.get(name, 0), held)
        squares = ["victim"] * victim + ["held"] * (held - victim)
        squares += ["free"] * (len(node["gpus"]) - held)
        # Where the gang lands: first on free squares, then on its victims' squares.
        landing = placed_on.get(name, 0)
        for i, kind in enumerate(squares):
            if landing and kind == "free":
                squares[i], landing = "placed", landing - 1
        for i, kind in enumerate(squares):
            if landing and kind == "victim":
                squares[i], landing = "victim placed", landing - 1
        out.append({"name": name, "squares": squares})
    return out


def compare(
    objects: list[dict[str, Any]], podgroup: str, scope: Scope | None, policies: list[str] | None = None
) -> dict[str, Any]:
    picture = build_picture(objects, now=time.time(), cluster="what-if")
    row = next((g for g in picture["gangs"] if g["key"] == podgroup), None)
    pod_gpus = row["podGpus"] if row else 0
    plans = []
    for name in policies or sorted(POLICIES, key=lambda n: (n != DEFAULT_POLICY, n)):
        result = planning.compute(objects, podgroup, name)
        plan = result.plan

        def label(victim: dict[str, Any]) -> str:
            if scope is not None and not scope.sees(victim.get("namespace") or ""):
                return OTHER_GANG
            return f"{victim.get('namespace')}/{victim.get('name')}"

        pods = len(plan.get("evictions") or [])
        gpus = sum(f.gpus for f in result.pods.values())
        units = len(plan.get("victims") or [])
        plans.append(
            {
                "policy": name,
                "about": getattr(POLICIES[name], "summary", ""),
                "feasible": plan.get("feasible"),
                "outcome": plan.get("outcome"),
                "reason": plan.get("reason"),
                "domain": plan.get("domain"),
                "victims": [
                    {"unit": label(v), "priority": v.get("priority"), "pods": len(v.get("pods") or [])}
                    for v in plan.get("victims") or []
                ],
                "evictedPods": pods,
                "evictedGpus": gpus,
                "units": units,
                "summary": f"evicts {plural(pods, 'pod')} in {plural(units, 'unit')}, {plural(gpus, 'GPU')}",
                "lostGpuHours": round(float(result.cost.get("lost_gpu_seconds") or 0) / 3600, 1),
                "placedPods": len(plan.get("placement") or {}),
                "planningSeconds": round(result.seconds, 4),
                "map": _small_map(picture, plan, result.pods, pod_gpus),
            }
        )
    return {"podGroup": podgroup, "plans": plans}


def live_objects() -> list[dict[str, Any]]:
    from scheduler.preemption.runtime import get_cluster

    return planning.fresh_objects(get_cluster())


def compare_live(podgroup: str, scope: Scope) -> dict[str, Any]:
    objects = planning.reserve_room(live_objects(), podgroup)
    return compare(objects, podgroup, scope)
