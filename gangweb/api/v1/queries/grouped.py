"""Admission decisions grouped (``GET /api/v1/decisions/groups/``, the /decisions/ page): by webhook,
outcome, gang and reason (a denial's message), denials first, with counts by the source each gang was
inferred from. The rows are the kept decisions of ``/api/v1/decisions/`` (``gangweb.api.v1.queries.
decisions``, the newest 5,000), already cut to the reader's scope."""

from __future__ import annotations

from typing import Any

from scheduler.engine.gangkey import gang_key_of

# The pods a group names (the rest are counted).
NAMED_PODS = 5


def counted(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``decisions`` and ``denied`` counted over ``rows`` (v1 decision rows), ``bySource`` ``[{source,
    count}]`` most first."""
    sources: dict[str, int] = {}
    for d in rows:
        if d.get("source"):
            sources[d["source"]] = sources.get(d["source"], 0) + 1
    return {
        "decisions": len(rows),
        "denied": sum(1 for d in rows if not d["allowed"]),
        "bySource": [
            {"source": k, "count": n} for k, n in sorted(sources.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    }


def grouped(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``rows`` (v1 decision rows, newest first) grouped: ``results`` (denied first, then the most recent),
    with ``counted(rows)``."""
    groups: dict[tuple, dict[str, Any]] = {}
    for d in rows:
        outcome = "allowed" if d["allowed"] else "denied"
        gang = d.get("podGroup") or None
        reason = d["message"] if outcome == "denied" else ""
        key = (d["webhook"], outcome, reason, d["namespace"], gang)
        group = groups.get(key)
        if group is None:  # rows come newest first: the first one seen is the latest
            group = groups[key] = {
                "webhook": d["webhook"],
                "outcome": outcome,
                "reason": reason,
                "namespace": d["namespace"],
                "name": gang,
                "podGroup": gang_key_of(d["namespace"], gang) if gang else None,
                "count": 0,
                "latest": d.get("at"),
                "pods": [],
            }
        group["count"] += 1
        if len(group["pods"]) < NAMED_PODS:
            group["pods"].append(d["name"])
    # Groups were met newest first; a stable sort puts the denials ahead and keeps that order.
    ordered = sorted(groups.values(), key=lambda g: g["outcome"] != "denied")
    return {**counted(rows), "results": ordered}
