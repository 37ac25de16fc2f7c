"""Admission decisions, from the live stream's log of ``admission.decisions`` (the newest ones kept):
grouped by what was decided, denials with their reason, counts by gang source."""

from __future__ import annotations

from typing import Any

from gangweb.access.scope import Scope
from gangweb.dashboard import stream


def decisions(scope: Scope, limit: int = 500) -> dict[str, Any]:
    rows = []
    for message in stream.latest("decisions", limit):
        for d in (message.get("payload") or {}).get("decisions", []):
            if scope.sees(d.get("namespace") or ""):
                rows.append({**d, "at": message.get("at")})
    groups: dict[tuple, dict[str, Any]] = {}
    sources: dict[str, int] = {}
    for d in rows:
        outcome = "allowed" if d.get("allowed") else "denied"
        key = (
            d.get("webhook"),
            outcome,
            d.get("message") if outcome == "denied" else "",
            d.get("podGroup") or "",
        )
        group = groups.setdefault(
            key,
            {
                "webhook": d.get("webhook"),
                "outcome": outcome,
                "reason": key[2],
                "podGroup": key[3],
                "namespace": d.get("namespace"),
                "count": 0,
                "latest": None,
                "names": [],
            },
        )
        group["count"] += 1
        group["latest"] = d.get("at")
        if len(group["names"]) < 5:
            group["names"].append(d.get("name"))
        if d.get("source"):
            sources[d["source"]] = sources.get(d["source"], 0) + 1
    ordered = sorted(groups.values(), key=lambda g: (g["outcome"] != "denied", -(g["latest"] or 0)))
    return {
        "count": len(rows),
        "denied": sum(1 for d in rows if not d.get("allowed")),
        "bySource": dict(sorted(sources.items(), key=lambda kv: -kv[1])),
        "results": ordered,
    }
