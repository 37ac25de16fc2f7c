"""Pictures and live messages cut to a reader's scope (``gangweb.access.scope.Scope``).

Squares held by gangs of namespaces the reader does not see stay on the map, drawn as "in use, other
namespace": the reader learns a GPU is taken, never by whom. Their gangs' rows, reasons and events
are left out; totals about gangs count only the gangs the reader sees.
"""

from __future__ import annotations

from typing import Any

from gangweb.access.scope import Scope
from gangweb.clusterview.picture import totals
from gangweb.clusterview.redact import redact
from scheduler.engine.gangkey import GangKey

OTHER = "~"
OTHER_ROW = {
    "key": OTHER,
    "namespace": None,  # the API's "in use, other namespace": no names (docs/design.md "API v1", Scope)
    "name": None,
    "otherNamespace": True,
    "other": True,
    "label": "in use, other namespace",
    "state": "other",
    "priorityClass": "",
    "tier": -1,
    "shade": 0,
}


def _namespace(key: str | None) -> str:
    """The namespace of a gang's or a pod's ``NAMESPACE/NAME`` as a message carries it, "" for none: read
    leniently (not ``split_gang_key``), as a cut must not fail on what a message holds."""
    return (key or "").partition("/")[0]


def cut_picture(picture: dict[str, Any], scope: Scope) -> dict[str, Any]:
    if scope.all_namespaces:
        return picture
    rows, remap = [], {}
    other_index = None
    for i, gang in enumerate(picture["gangs"]):
        if scope.sees(gang["namespace"]):
            remap[i] = len(rows)
            rows.append(gang)
    if len(rows) < len(picture["gangs"]):
        other_index = len(rows)
        rows.append(dict(OTHER_ROW))
    for i in range(len(picture["gangs"])):
        remap.setdefault(i, other_index)
    nodes = []
    for node in picture["nodes"]:
        cut = {**node, "gpus": [None if o is None else remap[o] for o in node["gpus"]]}
        if "nominated" in node:
            nominated = [
                None if o is None or remap[o] == other_index else remap[o] for o in node["nominated"]
            ]
            cut["nominated"] = nominated
        nodes.append(cut)
    out = {**picture, "nodes": nodes, "gangs": rows}
    out["totals"] = totals(out)
    out["tiers"] = [] if other_index is not None else picture["tiers"]
    return out


def cut_delta(payload: dict[str, Any], scope: Scope) -> dict[str, Any]:
    if scope.all_namespaces:
        return payload

    def owner(gang_key: GangKey | None) -> str | None:
        return gang_key if gang_key is None or scope.sees(_namespace(gang_key)) else OTHER

    def nominee(gang_key: GangKey | None) -> GangKey | None:
        return gang_key if gang_key is None or scope.sees(_namespace(gang_key)) else None

    nodes = [
        [
            index,
            [owner(k) for k in owners],
            None if nominated is None else [nominee(k) for k in nominated],
            *rest,
        ]
        for index, owners, nominated, *rest in payload.get("nodes", [])
    ]
    return {
        **payload,
        "nodes": nodes,
        "gangs": [g for g in payload.get("gangs", []) if scope.sees(g["namespace"])],
        "gone": [k for k in payload.get("gone", []) if scope.sees(_namespace(k))],
        "totals": None,  # cluster totals would count other teams' gangs: the page counts its own
        "tiers": None,
    }


def cut_key(scope: Scope) -> str:
    """Equal for two scopes exactly when ``cut_message`` cuts every message the same for both (it reads
    only which namespaces a scope sees): the live hub encodes a message once per key."""
    return "*" if scope.all_namespaces else ",".join(sorted(scope.per_namespace))


# Topics whose every message reaches every reader, cut or not (``cut_message`` never drops a map message):
# their numbers count only what each reader receives. On the other topics a reader who does not see
# every namespace holds sealed positions (``stream.seal``), not numbers, so no gap counts another team's events.
UNCUT_TOPICS = frozenset({"map"})


def sealed_for(scope: Scope, topic: str) -> bool:
    """Whether this reader holds sealed positions of ``topic`` rather than the log's numbers."""
    return not scope.all_namespaces and topic not in UNCUT_TOPICS


def cut_message(message: dict[str, Any], scope: Scope) -> dict[str, Any] | None:
    """``message`` as this reader may receive it, or None when nothing of it is theirs."""
    if scope.all_namespaces:
        return message
    kind, payload = message.get("type", ""), message.get("payload") or {}
    if kind == "map.delta":
        return {**message, "payload": cut_delta(payload, scope)}
    if kind == "map.reset":
        return message
    if kind == "admission.decisions":
        mine = [d for d in payload.get("decisions", []) if scope.sees(d.get("namespace") or "")]
        if not mine:
            return None
        return {**message, "payload": {"decisions": mine, "count": len(mine), "dropped": 0}}
    key = payload.get("podGroup") or payload.get("pod") or ""
    namespace = payload.get("namespace") or _namespace(key)
    # A notice concerns its victims' teams as much as the preemptor's.
    victims = [_namespace(str(unit).partition(" ")[2]) for unit in payload.get("units") or []]
    if not any(ns and scope.sees(ns) for ns in (namespace, *victims)):
        return None
    # A visible event may still name another tenant's pods (the victims of this team's preemption).
    return {**message, "payload": redact(payload, scope)}
