"""What changed between two pictures of the GPU map, as a small ``map.delta`` payload.

Deltas name gangs by key (``namespace/name``), not by their index in one picture's ``gangs``: a
browser keeps its own table. Node entries are ``[index, owners, nominated, cordoned, ready]`` with
``owners``/``nominated`` one gang key (or null) per device. When the node set itself changed, there is
no delta: ``None``, and the caller publishes ``map.reset`` (browsers fetch the picture again).
"""

from __future__ import annotations

from typing import Any

from scheduler.engine.gangkey import GangKey


def _gang_keys(picture: dict[str, Any], owners: list[int | None] | None) -> list[GangKey | None] | None:
    if owners is None:
        return None
    gangs = picture["gangs"]
    return [None if o is None else gangs[o]["key"] for o in owners]


def node_entry(picture: dict[str, Any], index: int) -> list[Any]:
    node = picture["nodes"][index]
    return [
        index,
        _gang_keys(picture, node["gpus"]),
        _gang_keys(picture, node.get("nominated")),
        node["cordoned"],
        node["ready"],
    ]


def diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    if [n["name"] for n in old["nodes"]] != [n["name"] for n in new["nodes"]] or [
        (d["name"], d["count"]) for d in old["domains"]
    ] != [(d["name"], d["count"]) for d in new["domains"]]:
        return None
    nodes = []
    for i in range(len(new["nodes"])):
        before, after = node_entry(old, i), node_entry(new, i)
        if before != after:
            nodes.append(after)
    old_rows: dict[GangKey, dict[str, Any]] = {g["key"]: g for g in old["gangs"]}
    new_rows: dict[GangKey, dict[str, Any]] = {g["key"]: g for g in new["gangs"]}
    return {
        "time": new["time"],
        "totals": new["totals"],
        "tiers": new["tiers"],
        "gangs": [row for gang_key, row in new_rows.items() if old_rows.get(gang_key) != row],
        "gone": sorted(set(old_rows) - set(new_rows)),
        "nodes": nodes,
    }
