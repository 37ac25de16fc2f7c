"""The replay's cluster as it runs: nodes with free GPU/CPU/memory, jobs (gangs and background pods), pods.

The records duck-type what the simulated cluster's binder reads (``scheduler/simulation/binder.py``:
``name``, ``rack``, ``ready``, ``free_gpus``, ``free_resources``; ``min_count``, ``topology``,
``pod_gpus``, ``pod_requests``; ``key``, ``node``), so binding here is the demo's binding.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from dataclasses import dataclass, field

from scheduler.replay.workload import JobSpec, Node

MAX_GPUS = 8  # the most GPUs a trace node has: the size of the free-GPU histograms


class ReplayNode:
    __slots__ = ("cpu", "free", "gpus", "memory", "model", "name", "rack", "ready")

    def __init__(self, node: Node) -> None:
        self.name, self.rack, self.model = node.name, node.rack, node.model
        self.gpus, self.cpu, self.memory = node.gpus, node.cpu_milli, node.memory_mib
        self.free = [node.gpus, node.cpu_milli, node.memory_mib]
        self.ready = True

    @property
    def free_gpus(self) -> int:
        return self.free[0]

    @property
    def free_resources(self) -> tuple[int, int, int]:
        return (self.free[0], self.free[1], self.free[2])


@dataclass(eq=False)
class ReplayPod:
    job: ReplayJob
    index: int
    node: str | None = None
    started: float | None = None
    attempt: int = 0  # bumped each time the pod is recreated after an eviction

    @property
    def name(self) -> str:
        return f"{self.job.spec.name}-{self.index}"

    @property
    def key(self) -> str:
        return f"{self.job.spec.namespace}/{self.name}"


@dataclass(eq=False)
class ReplayJob:
    spec: JobSpec
    pods: list[ReplayPod] = field(default_factory=list)
    running: int = 0
    progress: float = 0.0  # seconds of full-size work done
    rate: float = 0.0  # work per second now: running/size once minCount run, else 0
    rate_since: float = 0.0
    version: int = 0  # invalidates scheduled completions and restarts
    first_start: float | None = None
    broken_since: float | None = None
    done: bool = False
    next_try: float = 0.0  # earliest next preemption attempt
    backoff: float = 0.0
    blocked_at: int = -1  # the release count when binding last failed
    busy_gpus: int = 0  # what the job adds to the replay's busy and broken meters
    broken_gpus: int = 0
    saved_on_notice: float | None = None  # a victim's progress saved when its notice came (None: no notice)

    def __post_init__(self) -> None:
        self.pods = [ReplayPod(self, i) for i in range(self.spec.size)]

    # binder interface
    @property
    def key(self) -> str:
        return f"{self.spec.namespace}/{self.spec.name}"

    @property
    def min_count(self) -> int:
        return self.spec.min_count

    @property
    def topology(self) -> bool:
        return self.spec.topology

    @property
    def pod_gpus(self) -> int:
        return self.spec.pod_gpus

    @property
    def pod_requests(self) -> tuple[int, int, int]:
        s = self.spec
        return (s.pod_gpus, s.pod_cpu_milli, s.pod_memory_mib)

    @property
    def gpus(self) -> int:
        return self.spec.size * self.spec.pod_gpus

    @property
    def is_gang(self) -> bool:
        return self.spec.kind == "gang"

    @property
    def pending_pods(self) -> list[ReplayPod]:
        return [p for p in self.pods if p.node is None]

    @property
    def bound_pods(self) -> list[ReplayPod]:
        return [p for p in self.pods if p.node is not None]

    @property
    def broken(self) -> bool:
        return 0 < self.running < self.spec.min_count

    def working_rate(self) -> float:
        return self.running / self.spec.size if self.running >= self.spec.min_count else 0.0


def notice_save_seconds(gpus: int) -> float:
    """How long a job that checkpoints on notice takes to save: a base plus a share per GPU (larger
    models write more state). The replay's assumption, docs/replay.md "Notice"."""
    return 30.0 + 0.5 * gpus


def saved_progress(progress: float, checkpoint_seconds: float) -> float:
    """The progress of the last checkpoint (work is checkpointed every ``checkpoint_seconds`` of it)."""
    if checkpoint_seconds <= 0:
        return 0.0
    return math.floor(progress / checkpoint_seconds + 1e-9) * checkpoint_seconds


class Capacity:
    """Free-GPU histograms (cluster-wide and per rack) and GPUs held per priority: quick necessary checks."""

    def __init__(self, nodes: list[ReplayNode]) -> None:
        self.index = {n.name: i for i, n in enumerate(nodes)}
        # open[g]: indices (name order) of the nodes with at least g free GPUs
        self.open = {g: [i for i, n in enumerate(nodes) if n.free_gpus >= g] for g in range(1, MAX_GPUS + 1)}
        self.cluster = [0] * (MAX_GPUS + 1)
        self.racks: dict[str, list[int]] = {}
        self.held_by_priority: dict[int, int] = {}
        self.free_gpus = 0
        for n in nodes:
            self.cluster[min(n.free_gpus, MAX_GPUS)] += 1
            self.racks.setdefault(n.rack, [0] * (MAX_GPUS + 1))[min(n.free_gpus, MAX_GPUS)] += 1
            self.free_gpus += n.free_gpus

    def moved(self, node: ReplayNode, before: int) -> None:
        after = node.free_gpus
        for hist in (self.cluster, self.racks[node.rack]):
            hist[min(before, MAX_GPUS)] -= 1
            hist[min(after, MAX_GPUS)] += 1
        self.free_gpus += after - before
        i = self.index[node.name]
        for g in range(min(before, after) + 1, min(max(before, after), MAX_GPUS) + 1):
            row = self.open[g]
            if after >= g:
                insort(row, i)
            else:
                del row[bisect_left(row, i)]

    def hold(self, priority: int, gpus: int) -> None:
        self.held_by_priority[priority] = self.held_by_priority.get(priority, 0) + gpus

    @staticmethod
    def _pods(hist: list[int], pod_gpus: int) -> int:
        return sum(count * (free // pod_gpus) for free, count in enumerate(hist)) if pod_gpus else 1 << 30

    def may_bind(self, job: ReplayJob, pinned_rack: str | None) -> bool:
        """False when the free GPUs surely cannot hold the pods the job needs now."""
        needed = max(1, job.min_count - job.running)
        if pinned_rack is not None:
            return self._pods(self.racks[pinned_rack], job.pod_gpus) >= needed
        if job.topology:
            return any(self._pods(h, job.pod_gpus) >= needed for h in self.racks.values())
        return self._pods(self.cluster, job.pod_gpus) >= needed

    def may_preempt(self, job: ReplayJob) -> bool:
        """False when even every lower-priority GPU freed would not hold the GPUs the job still needs."""
        needed = (job.min_count - job.running) * job.pod_gpus
        lower = sum(g for p, g in self.held_by_priority.items() if p < job.spec.priority)
        return self.free_gpus + lower >= needed
