"""Admission decisions as kept (``gangweb.api.v1.store.keep_and_send``, the newest 5,000), cut to the
reader: ``/api/v1/decisions`` and a gang's page. Read only.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from gangweb.access.scope import Scope
from gangweb.api.v1 import filters
from gangweb.api.v1.store import DECISIONS
from scheduler.engine.gangkey import GangKey, gang_key_of, split_gang_key

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


def decisions(scope: Scope, *, namespace: str | None = None, gang_key: GangKey | None = None) -> list[dict]:
    """The kept decisions the reader sees, newest first: of ``namespace``, or of gang ``gang_key`` (a
    decision's ``podGroup`` is the PodGroup's name, in the pod's namespace)."""
    name = None
    if gang_key:
        namespace, name = split_gang_key(gang_key)
    out = []
    for decision in DECISIONS.newest():
        ns = decision.get("namespace") or ""
        if not scope.sees(ns) or (namespace and ns != namespace):
            continue
        if name and decision.get("podGroup") != name:
            continue
        out.append(row(decision))
    return out


def asked(scope: Scope, query) -> list[dict]:
    """The decisions of ``decisions/`` and ``decisions/groups/``: ``?namespace=`` (one), ``?podgroup=NS/NAME``,
    ``?allowed=true|false``; a bad value is a 400 naming the parameter."""
    namespace = query.get("namespace") or None
    gang_key = None
    if keys := filters.keys_of(query, "podgroup"):
        gang_key = gang_key_of(*keys[0])  # its namespace wins over ``?namespace=``
    rows = decisions(scope, namespace=namespace, gang_key=gang_key)
    if (raw := query.get("allowed")) is not None:
        if raw not in ("true", "false"):
            raise ValidationError({"allowed": ["true or false"]})
        rows = [r for r in rows if r["allowed"] == (raw == "true")]
    return rows
