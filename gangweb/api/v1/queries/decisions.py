"""Admission decisions, kept: the webhook's recorder publishes each interval's decisions to the
dashboard (admission/recorder.py); ``keep_and_send`` is the publisher gangweb hands it, so the newest
5,000 are also kept (``gangweb.api.v1.store.DECISIONS``) for ``/api/v1/decisions`` and a gang's page.
"""

from __future__ import annotations

from typing import Any

from gangweb.access.scope import Scope
from gangweb.api.v1.store import DECISIONS

EVENT_TYPE = "admission.decisions"


def keep_and_send(event_type: str, payload: dict[str, Any]) -> None:
    from gangweb import events

    if event_type == EVENT_TYPE:
        DECISIONS.push(list(reversed(payload.get("decisions") or [])))  # stored newest first
    events.send(event_type, payload)


def row(decision: dict[str, Any]) -> dict[str, Any]:
    return {
        "uid": decision.get("uid"),
        "webhook": decision.get("webhook"),
        "kind": decision.get("kind"),
        "namespace": decision.get("namespace") or "",
        "name": decision.get("name") or "",
        "operation": decision.get("operation"),
        "dryRun": bool(decision.get("dryRun")),
        "allowed": bool(decision.get("allowed")),
        "message": decision.get("message") or "",
        "warnings": list(decision.get("warnings") or []),
        "podGroup": decision.get("podGroup"),
        "source": decision.get("source"),
        "minCount": decision.get("minCount"),
        "mode": decision.get("mode"),
    }


def decisions(scope: Scope, *, namespace: str | None = None, podgroup: str | None = None) -> list[dict]:
    """The kept decisions the reader sees, newest first; ``podgroup`` is a name in ``namespace``."""
    out = []
    for decision in DECISIONS.newest():
        ns = decision.get("namespace") or ""
        if not scope.sees(ns) or (namespace and ns != namespace):
            continue
        if podgroup and decision.get("podGroup") != podgroup:
            continue
        out.append(row(decision))
    return out
