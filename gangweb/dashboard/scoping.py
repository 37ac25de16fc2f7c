"""The cluster picture and live events cut to a reader's scope (``gangweb.access.scope.Scope``).

A reader who sees every namespace gets everything. Anyone else keeps the GPU map's shape (a square
held by another tenant is "in use, other namespace": no gang, pod or namespace name), their own gangs
in full, and no other tenant's waiting gangs. Events naming a namespace reach only readers who see it;
events naming none are cluster aggregates, for all-namespace readers only (``cluster.state`` is cut
instead of dropped).
"""

from __future__ import annotations

from typing import Any

from gangweb.access.scope import Scope

OTHER = "in use, other namespace"
STATE_EVENT = "cluster.state"
DECISIONS_EVENT = "admission.decisions"
EVICTION_EVENT = "eviction"


def _namespace(key: str) -> str:
    return key.partition("/")[0] if "/" in key else ""


def cut_state(state: dict[str, Any], scope: Scope) -> dict[str, Any]:
    if scope.all_namespaces:
        return state
    gangs = state.get("gangs") or []
    visible = [scope.sees(_namespace(g.get("podGroup") or "")) for g in gangs]
    cut_gangs = [
        gang
        if seen
        else {
            "podGroup": "",
            "otherNamespace": True,
            "label": OTHER,
            "state": gang.get("state"),
            "gpus": gang.get("gpus"),
            "podGpus": gang.get("podGpus"),
            "pods": gang.get("pods"),
            "runningPods": gang.get("runningPods"),
            "tier": gang.get("tier"),
            "priority": gang.get("priority"),
            "priorityClass": gang.get("priorityClass"),
            "shade": 0,
        }
        for gang, seen in zip(gangs, visible, strict=True)
    ]
    racks = [
        {
            **rack,
            "nodes": [
                {
                    **node,
                    "pods": [p for p in node.get("pods") or [] if scope.sees(_namespace(p.get("pod") or ""))],
                }
                for node in rack.get("nodes") or []
            ],
        }
        for rack in state.get("racks") or []
    ]
    pending = [
        p for p in state.get("pending") or [] if 0 <= p.get("gang", -1) < len(visible) and visible[p["gang"]]
    ]
    cut = {**state, "gangs": cut_gangs, "racks": racks, "pending": pending}
    cut.pop("changes", None)  # the simulation's change list names pods of every namespace
    return cut


def event_namespace(payload: dict[str, Any]) -> str | None:
    """The namespace an event is about, None for cluster aggregates."""
    if payload.get("namespace"):
        return str(payload["namespace"])
    for key in ("podGroup", "pod", "preemptor"):
        value = payload.get(key)
        if isinstance(value, str) and "/" in value:
            return _namespace(value)
    return None


def cut_event(event: str, payload: dict[str, Any], scope: Scope) -> dict[str, Any] | None:
    """The payload this reader may get, or None to drop the event."""
    if event == STATE_EVENT:
        return cut_state(payload, scope)
    if scope.all_namespaces:
        return payload
    if event == DECISIONS_EVENT:
        decisions = [d for d in payload.get("decisions") or [] if scope.sees(d.get("namespace") or "")]
        return {**payload, "decisions": decisions, "count": len(decisions)} if decisions else None
    if event == EVICTION_EVENT and isinstance(payload.get("pod"), str):
        victim_seen = scope.sees(_namespace(payload["pod"]))
        preemptor_seen = scope.sees(_namespace(payload.get("podGroup") or ""))
        if victim_seen and not preemptor_seen:
            return {**payload, "podGroup": "", "request": None, "plan": None, "preemptor": OTHER}
        if preemptor_seen and not victim_seen:
            return {**payload, "pod": "", "victimUnit": "", "node": payload.get("node"), "victim": OTHER}
        return payload if victim_seen else None
    namespace = event_namespace(payload)
    if namespace is None or not scope.sees(namespace):
        return None
    return payload
