"""The dashboard's view of the simulated cluster: a compact, JSON-ready picture.

Nodes name their GPUs' owners by index into ``gangs`` so a 512-GPU picture stays a few kilobytes, and
list which pod holds which GPU indices (the page flashes a victim's squares when it is evicted).
"""

from __future__ import annotations

import zlib
from typing import Any

from scheduler.simulation.catalog import TIERS
from scheduler.simulation.state import SimGang, SimNode, SimPod, rfc3339

TIER_INDEX = {tier.priority_class: i for i, tier in enumerate(TIERS)}
# Shades per tier: neighbouring gangs of the same tier still look different.
SHADES = 5


def gang_shade(key: str) -> int:
    """Which shade of its tier a gang is drawn in: stable across processes and restarts."""
    return zlib.crc32(key.encode()) % SHADES


def state_totals(
    nodes: int, gpus: int, allocated: int, gang_rows: list[dict[str, Any]], pending: list[dict[str, Any]]
) -> dict[str, int]:
    """The ``totals`` of a ``cluster.state`` picture (shared with the picture of a real cluster)."""
    return {
        "nodes": nodes,
        "gpus": gpus,
        "allocatedGpus": allocated,
        "freeGpus": gpus - allocated,
        "runningGangs": sum(1 for g in gang_rows if g["state"] == "running"),
        "pendingGangs": len(pending),
        "pendingGpus": sum(gang_rows[row["gang"]]["gpus"] for row in pending),
    }


def build_summary(
    nodes: list[SimNode], gangs: dict[str, SimGang], pods: dict[str, SimPod], now: float, tick: int
) -> dict[str, Any]:
    gang_ids: dict[str, int] = {}
    gang_rows: list[dict[str, Any]] = []
    pods_by_gang: dict[str, list[SimPod]] = {}
    for pod in pods.values():
        pods_by_gang.setdefault(pod.gang_key, []).append(pod)

    for key, gang in sorted(gangs.items(), key=lambda kv: (-kv[1].tier.value, kv[1].created, kv[0])):
        members = pods_by_gang.get(key, [])
        gang_ids[key] = len(gang_rows)
        gang_rows.append(
            {
                "podGroup": key,
                "priorityClass": gang.tier.priority_class,
                "priority": gang.tier.value,
                "tier": TIER_INDEX[gang.tier.priority_class],
                "shade": gang_shade(key),
                "disruption": gang.tier.disruption,
                "topology": gang.topology,
                "pods": gang.size,
                "podGpus": gang.pod_gpus,
                "gpus": gang.gpus,
                "runningPods": sum(1 for p in members if p.running),
                "state": "running" if gang.started is not None else "pending",
            }
        )

    racks: dict[str, dict[str, Any]] = {}
    pod_gang = {key: pod.gang_key for key, pod in pods.items()}
    allocated_by_tier = [0] * len(TIERS)
    for node in nodes:
        rack = racks.setdefault(node.rack, {"name": node.rack, "zone": node.zone, "nodes": []})
        owners: list[int | None] = []
        pod_gpus: dict[str, list[int]] = {}
        for index, owner in enumerate(node.slots):
            gang_id = gang_ids.get(pod_gang.get(owner, "")) if owner else None
            owners.append(gang_id)
            if gang_id is not None:
                allocated_by_tier[gang_rows[gang_id]["tier"]] += 1
                pod_gpus.setdefault(owner, []).append(index)
        rack["nodes"].append(
            {
                "name": node.name,
                "ready": node.ready,
                "gpus": owners,
                "pods": [{"pod": key, "gpus": idx} for key, idx in pod_gpus.items()],
            }
        )

    pending = []
    for key, gang in gangs.items():
        waiting_pods = [p for p in pods_by_gang.get(key, []) if not p.running]
        if gang.started is not None or not waiting_pods:
            continue
        reason = next(
            (
                c["message"]
                for c in gang.conditions
                if c["type"] == "PodGroupInitiallyScheduled" and c["status"] == "False"
            ),
            "",
        )
        pending.append({"gang": gang_ids[key], "waitingSeconds": int(now - gang.queued), "reason": reason})
    pending.sort(key=lambda row: row["gang"])

    total = sum(len(n.slots) for n in nodes)
    allocated = sum(allocated_by_tier)
    return {
        "cluster": "simulated",
        "time": rfc3339(now),
        "tick": tick,
        "tiers": [
            {
                "priorityClass": t.priority_class,
                "priority": t.value,
                "disruption": t.disruption,
                "allocatedGpus": allocated_by_tier[i],
            }
            for i, t in enumerate(TIERS)
        ],
        "gangs": gang_rows,
        "racks": list(racks.values()),
        "pending": pending,
        "totals": state_totals(len(nodes), total, allocated, gang_rows, pending),
    }
