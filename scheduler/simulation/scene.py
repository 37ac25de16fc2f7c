"""The demo's scripted scene: a high-priority gang arrives that fits only once lower-priority gangs
make room, so the first minute of ``make demo`` shows a whole preemption (docs/dashboard.md, "Demo").

``design(cluster)`` shapes the gang from the cluster as it is, so the same seed and tick give the same
scene: an ``inference-critical`` gang of whole-node pods (the top tier, so the binder gives it the room first), constrained to one rack, of ``MAX_PODS`` pods or one more
than any rack has nodes free or freed by gangs that finish within ``SOON_TICKS`` (so the binder
cannot place it before gangweb acts), and no more than some rack has nodes that
are free or held only by lower-priority gangs without a disruption budget (so a plan exists). ``stage``
submits it; the pipeline does the rest: Unschedulable on the next tick, detection, plan, evictions,
and the binder places it on the freed nodes (it is the highest tier waiting).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.simulation.catalog import GPUS_PER_NODE, TIER_BY_CLASS
from scheduler.simulation.state import Gang
from scheduler.simulation.world import World

if TYPE_CHECKING:
    from scheduler.simulation.cluster import SimulatedCluster

TIER = TIER_BY_CLASS["inference-critical"]
NAMESPACE = "team-llm"
NAME = "scene-serve"
MAX_PODS = 4  # 32 GPUs, when a rack can make room for them: big enough to see on the map
# Nodes whose gangs all finish within this many ticks count as free: the gang must not fit on them
# before gangweb acts (detection runs every 10 s, five demo ticks; twice that for a loaded machine).
SOON_TICKS = 10


def design(cluster: World) -> Gang | None:
    """The scene's gang for the cluster as it is now, or None when no rack can make room for one."""
    with cluster._lock:
        racks: dict[str, list[tuple[bool, bool]]] = {}  # rack -> per ready node (free soon, clearable)
        soon = cluster._tick_count + SOON_TICKS
        for node in cluster._nodes:
            if not node.ready:
                continue
            holders = [cluster._gangs[cluster._pods[key].gang_key] for key in node.slots if key is not None]
            clearable = all(g.tier.value < TIER.value and g.pdb_min_available is None for g in holders)
            ending = all(g.started_tick is not None and g.started_tick + g.run_ticks <= soon for g in holders)
            racks.setdefault(node.rack, []).append((ending, clearable))
        most_free = max((sum(free for free, _ in nodes) for nodes in racks.values()), default=0)
        room = max((sum(clearable for _, clearable in nodes) for nodes in racks.values()), default=0)
        size = min(max(MAX_PODS, most_free + 1), room)
        if size <= max(1, most_free):
            return None
        return Gang(
            namespace=NAMESPACE,
            name=NAME,
            tier=TIER,
            size=size,
            pod_gpus=GPUS_PER_NODE,
            min_count=size,
            topology=True,
            pdb_min_available=None,
            run_ticks=TIER.ticks[1],
            created=cluster.now,
            queued_tick=cluster._tick_count,
        )


def stage(cluster: SimulatedCluster) -> Gang | None:
    """Submit the scene's gang (``SimulatedCluster.submit``); None when this cluster has no room for a scene
    or staged it already."""
    with cluster._lock:
        if f"{NAMESPACE}/{NAME}" in cluster._gangs:
            return None
        gang = design(cluster)
        if gang is not None:
            cluster.submit(gang)
        return gang
