"""What if? for the lab and a gang page: the gangs of a dump, and what ``POST /api/v1/simulate/`` adds to
each plan for them (a line on the policy, a summary in counted words, a small map of its nodes).

``plans`` and ``gangs`` are what ``simulate/`` and ``simulate/podgroups/`` answer, on the live cluster's
objects or an uploaded ``kubectl get ... -o yaml`` dump (the snapshot contract of docs/design.md): plain
functions without Django, so that the snapshot worker (``gangweb/api/v1/uploadworker.py``) runs them on an
upload as the web process runs them on the live cluster. Nothing is executed or recorded.
"""

from __future__ import annotations

import time
from typing import Any

from gangweb.access.scope import Scope
from gangweb.clusterview.picture import build_picture
from scheduler.engine import DEFAULT_POLICY, POLICIES, PodGroupNotFound, SnapshotError, parse_snapshot
from scheduler.engine import plan as engine_plan
from scheduler.engine.gangkey import GangKey
from scheduler.preemption import planning
from scheduler.words import plural

# What if? plans with every policy, side by side, the default first.
POLICY_ORDER = tuple(sorted(POLICIES, key=lambda n: (n != DEFAULT_POLICY, n)))


class Refused(Exception):
    """A snapshot or a gang the engine cannot plan; ``field`` is the part of the request at fault."""

    def __init__(self, field: str, message: str, *, missing: bool = False):
        super().__init__(message)
        self.field = field
        self.missing = missing  # the gang is not there (a 404), rather than asked for wrongly


def plans(objects: list[Any], gang_key: GangKey, policies: list[str], *, maps: bool = False) -> list[dict]:
    """The plans of the gang ``gang_key`` on ``objects`` under each policy, each with its policy's line and a
    summary, and with ``maps`` its small map."""
    try:
        snapshot = parse_snapshot(objects)
        picture = picture_of(objects) if maps else None
    except ValueError as exc:  # SnapshotError, or a gang key the map cannot split (``picture_of``)
        raise Refused("snapshot", str(exc)) from None
    rows = []
    for policy in policies:
        started = time.perf_counter()
        try:
            result = engine_plan(snapshot, gang_key, policy=policy)
        except SnapshotError as exc:
            raise Refused("podGroup", str(exc), missing=isinstance(exc, PodGroupNotFound)) from None
        planned = planning.result_of(snapshot, result, time.perf_counter() - started)
        row = {
            **planned.plan,
            "cost": planned.json_cost,
            "planningSeconds": round(planned.seconds, 6),
            "about": about(policy),
            "summary": summary(planned.plan, planned.pods),
        }
        if picture is not None:
            row["map"] = small_map(picture, planned.plan, planned.pods)
        rows.append(row)
    return rows


def gangs(objects: list[Any], scope: Scope, *, checked: bool = True) -> list[dict[str, Any]]:
    """``gangs_of`` a snapshot, its objects checked first (``checked``) so that a malformed one is refused
    by name, as ``plans`` refuses it."""
    try:
        if checked:
            parse_snapshot(objects)
        return gangs_of(objects, scope)
    except ValueError as exc:  # SnapshotError, or a gang key the map cannot split (``picture_of``)
        raise Refused("snapshot", str(exc)) from None


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


def picture_of(objects: list[Any]) -> dict[str, Any]:
    """The GPU map's picture of a snapshot's (or the live cluster's) objects, for the small maps."""
    return build_picture(flatten(objects), now=time.time(), cluster="what-if")


def gangs_of(objects: list[Any], scope: Scope) -> list[dict[str, Any]]:
    """The gangs of ``objects`` the reader may simulate: waiting first, then by priority (the lab's list)."""
    rows = [g for g in picture_of(objects)["gangs"] if scope.may("simulate", g["namespace"])]
    rows.sort(key=lambda g: (g["state"] == "running", -g["priority"], g["key"]))
    return [
        {
            "namespace": g["namespace"],
            "name": g["name"],
            "podGroup": g["key"],
            "state": g["state"],
            "priority": g["priority"],
            "priorityClass": g["priorityClass"],
            "gpus": g["gpus"],
        }
        for g in rows
    ]


def about(policy: str) -> str:
    return getattr(POLICIES.get(policy), "summary", "")


def summary(plan: dict[str, Any], facts: dict) -> str:
    pods, units = len(plan.get("evictions") or []), len(plan.get("victims") or [])
    gpus = sum(f.gpus for f in facts.values())
    return f"evicts {plural(pods, 'pod')} in {plural(units, 'unit')}, {plural(gpus, 'GPU')}"


def small_map(picture: dict[str, Any], plan: dict[str, Any], facts: dict) -> list[dict]:
    """The nodes ``plan`` evicts on or places on, each GPU a square: ``free``, ``held``, ``victim``,
    ``placed`` (on a free GPU) or ``victim placed``."""
    row = next((g for g in picture["gangs"] if g["key"] == plan.get("podGroup")), None)
    return _small_map(picture, plan, facts, row["podGpus"] if row else 0)


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
