"""Admission decisions as kept (``gangweb.api.v1.store.keep_and_send``, the newest 5,000), cut to the
reader: ``/api/v1/decisions`` and a gang's page. Read only.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from gangweb.access.scope import Scope
from gangweb.api.v1 import filters
from gangweb.api.v1.store import DECISIONS

PARAMS = ("namespace", "allowed", "podgroup")


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
        "at": decision.get("at"),
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


def asked(scope: Scope, query) -> list[dict]:
    """The decisions of ``decisions/`` and ``decisions/groups/``: ``?namespace=`` (one), ``?podgroup=NS/NAME``,
    ``?allowed=true|false``; a bad value is a 400 naming the parameter."""
    namespace = query.get("namespace") or None
    gang = None
    if keys := filters.keys_of(query, "podgroup"):
        namespace, gang = keys[0]
    rows = decisions(scope, namespace=namespace, podgroup=gang)
    if (raw := query.get("allowed")) is not None:
        if raw not in ("true", "false"):
            raise ValidationError({"allowed": ["true or false"]})
        rows = [r for r in rows if r["allowed"] == (raw == "true")]
    return rows
