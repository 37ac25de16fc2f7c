"""One reason in plain words why a gang waits, worked out from the same picture the map draws.

The simulation's and kube-scheduler's condition messages are written at their own moment (mid-tick,
before other gangs bound); the map is drawn from one snapshot, so the reason shown beside it is
counted from that snapshot too, and the two always agree.
"""

from __future__ import annotations

from typing import Any

from scheduler.words import plural


def _room(free_per_node: list[int], pod_gpus: int) -> int:
    """How many pods of ``pod_gpus`` GPUs fit in these nodes' free GPUs."""
    if pod_gpus <= 0:
        return 0
    return sum(free // pod_gpus for free in free_per_node)


def dominant_reason(gang: dict[str, Any], picture: dict[str, Any]) -> str:
    needed = max(gang["minCount"] - gang["placed"], 0) or max(gang["pods"] - gang["placed"], 0)
    each = gang["podGpus"]
    if needed == 0:
        return "all pods placed"
    if each == 0:
        return f"waiting for {plural(needed, 'pod')} to be bound (no GPUs asked)"
    free_by_domain: dict[int, list[int]] = {}
    for node in picture["nodes"]:
        if node["cordoned"] or not node["ready"]:
            continue
        free = sum(1 for owner in node["gpus"] if owner is None)
        free_by_domain.setdefault(node["domain"], []).append(free)
    all_free = [f for frees in free_by_domain.values() for f in frees]
    total_free = sum(all_free)
    ask = f"needs {needed} \u00d7 {plural(each, 'GPU')}"
    if gang["topology"]:
        best, best_room, best_free = None, -1, 0
        for domain, frees in free_by_domain.items():
            room = _room(frees, each)
            if room > best_room or (room == best_room and sum(frees) > best_free):
                best, best_room, best_free = domain, room, sum(frees)
        if best is None:
            return f"{ask} in one rack; no rack has a usable node"
        if best_room >= needed:
            return f"{ask} in one rack; {picture['domains'][best]['name']} has room: waiting to be bound"
        rack = picture["domains"][best]["name"]
        room_text = f"room for {plural(best_room, 'pod')}" if best_room > 0 else "no room"
        return f"{ask} in one rack; the best rack ({rack}) has {room_text} ({plural(best_free, 'GPU')} free there)"
    room = _room(all_free, each)
    if room >= needed:
        return f"{ask}; there is room now: waiting to be bound"
    if total_free < needed * each:
        return f"{ask}; only {plural(total_free, 'GPU')} free in the cluster"
    nodes = sum(1 for f in all_free if f >= each)
    return (
        f"{ask}; {total_free} GPUs free but fragmented: {plural(nodes, 'node has', 'nodes have')} {each} free"
    )
