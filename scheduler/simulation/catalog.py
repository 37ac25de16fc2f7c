"""The fixed vocabulary of the simulated cluster: node shape, labels, priority tiers, workload kinds.

Kept apart from the mechanics so the demo's "look" (names, tiers, sizes) can be tuned in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

GPU = "nvidia.com/gpu"
ZONE_LABEL = "topology.kubernetes.io/zone"
RACK_LABEL = "topology.gangweb.io/rack"
HOSTNAME_LABEL = "kubernetes.io/hostname"
GANG_LABEL = "gangweb.io/gang"

NODES_PER_RACK = 8
RACKS_PER_ZONE = 4
GPUS_PER_NODE = 8
GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
NODE_ALLOCATABLE = {
    "cpu": "190",
    "memory": "1900Gi",
    "pods": "110",
    "ephemeral-storage": "3500Gi",
    GPU: str(GPUS_PER_NODE),
}
# What each GPU of a pod brings along; GPUs stay the scarce resource, as on real training nodes.
CPU_PER_GPU = 20
MEMORY_GI_PER_GPU = 200

# Gang lifetimes are counted in ticks (GANGWEB_SIM_TICK_SECONDS, 2 s in the demo): a 90-tick gang runs
# three minutes there, long enough to watch, short enough to see turnover.


@dataclass(frozen=True)
class Tier:
    """A PriorityClass, and how often and how gangs of that class are submitted."""

    priority_class: str
    value: int
    description: str
    weight: float  # share of submissions
    disruption: str  # "all" or "single"
    pod_gpus: tuple[int, ...]  # GPUs per pod, one is drawn
    pod_counts: tuple[int, ...]  # pods per gang, one is drawn
    ticks: tuple[int, int]  # run time range, in ticks
    topology_share: float  # share of gangs constrained to one rack
    pdb_share: float  # share of gangs protected by a PodDisruptionBudget


TIERS: tuple[Tier, ...] = (
    Tier(
        "inference-critical",
        1_000_000,
        "Serving replicas; preempt only as a last resort.",
        0.12,
        "single",
        (1, 2),
        (2, 3, 4),
        (120, 400),
        0.0,
        1.0,
    ),
    Tier(
        "training-high", 100_000, "Flagship training runs.", 0.22, "all", (8,), (2, 4, 8), (60, 240), 0.7, 0.3
    ),
    Tier(
        "training-standard",
        10_000,
        "Team training and fine-tuning jobs.",
        0.36,
        "all",
        (4, 8),
        (1, 2, 4),
        (30, 150),
        0.4,
        0.0,
    ),
    Tier(
        "batch-low",
        1_000,
        "Evaluation sweeps and batch inference; first to go.",
        0.30,
        "single",
        (1, 2, 4),
        (1, 2, 4, 8),
        (15, 90),
        0.0,
        0.0,
    ),
)
TIER_BY_CLASS = {tier.priority_class: tier for tier in TIERS}

NAMESPACES = ("team-llm", "team-vision", "team-speech", "team-recsys", "research")
WORKLOAD_WORDS = {
    "inference-critical": ("serve", "embed", "rank"),
    "training-high": ("pretrain", "rlhf", "distill"),
    "training-standard": ("finetune", "train", "sft"),
    "batch-low": ("eval", "sweep", "batch"),
}
