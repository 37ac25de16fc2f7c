"""The seeded stream of gangs that teams submit to the simulated cluster."""

from __future__ import annotations

import random

from scheduler.simulation.catalog import NAMESPACES, TIERS, WORKLOAD_WORDS, Tier
from scheduler.simulation.state import Gang

# How the simulated workloads checkpoint (docs/dashboard.md "Demo"): a third each.
CHECKPOINT_KINDS = ("every", "notice", "never")


class WorkloadGenerator:
    """Draws gangs from the tier mix; the same seed gives the same gangs in the same order."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._serial = 0

    def _pick_tier(self) -> Tier:
        return self._rng.choices(TIERS, weights=[t.weight for t in TIERS])[0]

    def new_gang(self, created: float, queued_tick: int, max_gpus: int) -> Gang:
        """One gang submitted at ``created``; no gang asks for more than ``max_gpus`` GPUs."""
        rng = self._rng
        tier = self._pick_tier()
        pod_gpus = rng.choice(tier.pod_gpus)
        size = rng.choice(tier.pod_counts)
        while size > 1 and size * pod_gpus > max_gpus:
            size //= 2
        pod_gpus = min(pod_gpus, max_gpus)
        self._serial += 1
        word = rng.choice(WORKLOAD_WORDS[tier.priority_class])
        namespace = rng.choice(NAMESPACES)
        # Elastic "single" gangs can start with part of their pods; "all" gangs need every pod.
        min_count = size if tier.disruption == "all" else max(1, (size + 1) // 2)
        pdb_min_available = None
        if rng.random() < tier.pdb_share:
            pdb_min_available = max(1, size - 1) if tier.disruption == "single" else size
        # Checkpointing by serial, not drawn: the seeded stream of gangs stays what it was.
        checkpoints = CHECKPOINT_KINDS[self._serial % len(CHECKPOINT_KINDS)]
        return Gang(
            namespace=namespace,
            name=f"{word}-{self._serial:04d}",
            tier=tier,
            size=size,
            pod_gpus=pod_gpus,
            min_count=min_count,
            topology=size > 1 and rng.random() < tier.topology_share,
            pdb_min_available=pdb_min_available,
            run_ticks=rng.randint(*tier.ticks),
            created=created,
            queued_tick=queued_tick,
            checkpoints=checkpoints,
        )
