"""One reason in plain words why a gang waits, worked out from the same picture the map draws.

The simulation's and kube-scheduler's condition messages are written at their own moment (mid-tick,
before other gangs bound); the map is drawn from one snapshot, so the reason shown beside it is
counted from that snapshot too, and the two always agree.
"""

from __future__ import annotations

from typing import Any

from scheduler.words import plural


class Room:
    """The free GPUs of a picture's usable nodes, by topology domain, counted once per picture: every
    waiting gang's reason reads the same counts. (Counted per gang, 1,000 waiting gangs on 1,004 nodes
    took 5.3 s of build_picture's 5.4 s, bench api's cluster, load 4; once, well under a second.)"""

    def __init__(self, picture: dict[str, Any]) -> None:
        self.by_domain: dict[int, list[int]] = {}
        for node in picture["nodes"]:
            if node["cordoned"] or not node["ready"]:
                continue
            free = sum(1 for owner in node["gpus"] if owner is None)
            self.by_domain.setdefault(node["domain"], []).append(free)
        self.free = {domain: sum(frees) for domain, frees in self.by_domain.items()}
        self.total_free = sum(self.free.values())
        self._pods: dict[int, dict[int, int]] = {}

    def pods(self, pod_gpus: int) -> dict[int, int]:
        """How many pods of ``pod_gpus`` GPUs fit in each domain's free GPUs (node by node)."""
        if pod_gpus not in self._pods:
            self._pods[pod_gpus] = {
                domain: (sum(free // pod_gpus for free in frees) if pod_gpus > 0 else 0)
                for domain, frees in self.by_domain.items()
            }
        return self._pods[pod_gpus]


def dominant_reason(gang: dict[str, Any], picture: dict[str, Any], room: Room | None = None) -> str:
    needed = max(gang["minCount"] - gang["placed"], 0) or max(gang["pods"] - gang["placed"], 0)
    each = gang["podGpus"]
    if needed == 0:
        return "all pods placed"
    if each == 0:
        return f"waiting for {plural(needed, 'pod')} to be bound (no GPUs asked)"
    room = room or Room(picture)
    fits = room.pods(each)
    ask = f"needs {needed} \u00d7 {plural(each, 'GPU')}"
    if gang["topology"]:
        best, best_room, best_free = None, -1, 0
        for domain, pods in fits.items():
            if pods > best_room or (pods == best_room and room.free[domain] > best_free):
                best, best_room, best_free = domain, pods, room.free[domain]
        if best is None:
            return f"{ask} in one rack; no rack has a usable node"
        if best_room >= needed:
            return f"{ask} in one rack; {picture['domains'][best]['name']} has room: waiting to be bound"
        rack = picture["domains"][best]["name"]
        room_text = f"room for {plural(best_room, 'pod')}" if best_room > 0 else "no room"
        return f"{ask} in one rack; the best rack ({rack}) has {room_text} ({plural(best_free, 'GPU')} free there)"
    if sum(fits.values()) >= needed:
        return f"{ask}; there is room now: waiting to be bound"
    if room.total_free < needed * each:
        return f"{ask}; only {plural(room.total_free, 'GPU')} free in the cluster"
    nodes = sum(1 for frees in room.by_domain.values() for f in frees if f >= each)
    return (
        f"{ask}; {room.total_free} GPUs free but fragmented: "
        f"{plural(nodes, 'node has', 'nodes have')} {each} free"
    )
