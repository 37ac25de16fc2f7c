"""What the replay runs: the cluster cut from the trace, its background pods, and the seeded gangs.

Everything here is drawn once per seed, before any policy runs, so every policy sees the same
arrivals. See docs/replay.md ("The model") for the reasoning behind each number.

- **Cluster.** The trace's GPU nodes (``--nodes N`` keeps a seeded sample of N), grouped into racks of
  up to ``RACK_SIZE`` nodes of one GPU model and size: the trace names no topology, so racks are ours.
- **Background.** The trace's scheduled GPU pods, in submit order, with their CPU, memory, GPU count,
  QoS class (mapped to a priority by ``QOS_PRIORITY``) and run time. The trace's own timing fills a
  1,213-node cluster to under 1 %, so the stream is replayed faster: gaps between submits are the
  trace's, scaled so that the background asks for ``background_load`` of the GPUs on average. At the
  start the cluster already holds a steady-state background (length-biased draw, residual run time).
- **Gangs.** Training jobs of 2-64 pods x 1-8 GPUs (``SIZES``, ``POD_GPUS``), work of 30 min-12 h
  (log-uniform), a tier (``TIERS``), ``all`` (70 %, minCount = size) or ``single`` (elastic, minCount =
  half), a third bound to one rack when a rack can hold them; Poisson arrivals at ``gang_load`` of the
  GPUs. Gangs already running at the start are drawn the same way.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from itertools import groupby, pairwise

from scheduler.replay.trace import Trace, TraceNode, TracePod

RACK_SIZE = 16
# The trace's QoS classes as priorities. Latency-sensitive serving outranks every training tier; the
# best-effort and burstable pods are what training may preempt.
QOS_PRIORITY = {"BE": 50, "Burstable": 150, "LS": 1000, "Guaranteed": 1100}
TIERS = (("low", 200, 0.45), ("standard", 400, 0.35), ("high", 800, 0.20))  # name, priority, share
SIZES = ((2, 30), (4, 25), (8, 20), (16, 12), (32, 8), (64, 5))  # pods, weight
POD_GPUS = ((1, 15), (2, 15), (4, 20), (8, 50))  # GPUs per pod, weight
WORK_HOURS = (0.5, 12.0)  # log-uniform
ALL_SHARE = 0.7
TOPOLOGY_SHARE = 0.35
CPU_MILLI_PER_GPU = 4000
MEMORY_MIB_PER_GPU = 16384


@dataclass(frozen=True)
class Node:
    name: str
    rack: str
    model: str
    gpus: int
    cpu_milli: int
    memory_mib: int


@dataclass(frozen=True)
class JobSpec:
    """A gang, or one background pod (a job of size 1 that never preempts)."""

    name: str
    namespace: str
    kind: str  # "gang" | "background"
    tier: str  # gang tier, or the trace's QoS class
    priority: int
    size: int
    min_count: int
    pod_gpus: int
    pod_cpu_milli: int
    pod_memory_mib: int
    disruption: str  # "all" | "single"
    topology: bool
    arrival: float  # seconds from the start; 0 for what runs at the start
    work: float  # seconds of work at full size
    initial: bool = False  # already running when the replay starts (not counted in waits)


@dataclass(frozen=True)
class Workload:
    nodes: tuple[Node, ...]
    jobs: tuple[JobSpec, ...]  # sorted by arrival, then name

    @property
    def gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)


def build_workload(
    trace: Trace,
    *,
    hours: float,
    seed: int,
    nodes: int | None = None,
    background_load: float = 0.45,
    gang_load: float = 0.55,
) -> Workload:
    rng = random.Random(seed)
    cluster = _cluster(trace.nodes, nodes, rng)
    horizon = hours * 3600
    gpus = sum(n.gpus for n in cluster)
    jobs = _background(trace.pods, cluster, horizon, background_load * gpus, random.Random(rng.random()))
    jobs += _gangs(cluster, horizon, gang_load * gpus, random.Random(rng.random()))
    jobs.sort(key=lambda j: (j.arrival, j.name))
    return Workload(tuple(cluster), tuple(jobs))


def _cluster(trace_nodes: tuple[TraceNode, ...], count: int | None, rng: random.Random) -> list[Node]:
    chosen = [n for n in trace_nodes if n.gpus > 0]
    if count is not None and count < len(chosen):
        chosen = sorted(rng.sample(chosen, count), key=lambda n: n.name)
    racks: list[Node] = []
    shape = lambda n: (n.model, n.gpus, n.cpu_milli, n.memory_mib)  # noqa: E731
    for (model, gpus, *_), group in groupby(sorted(chosen, key=lambda n: (shape(n), n.name)), key=shape):
        members = list(group)
        for i, n in enumerate(members):
            rack = f"{model.lower()}-{gpus}g-{n.cpu_milli // 1000}c-r{i // RACK_SIZE}"
            racks.append(Node(n.name, rack, model, n.gpus, n.cpu_milli, n.memory_mib))
    return sorted(racks, key=lambda n: n.name)


def _fits_somewhere(cluster: list[Node], gpus: int, cpu: int, memory: int) -> bool:
    return any(n.gpus >= gpus and n.cpu_milli >= cpu and n.memory_mib >= memory for n in cluster)


def _background(
    pods: tuple[TracePod, ...], cluster: list[Node], horizon: float, target_gpus: float, rng: random.Random
) -> list[JobSpec]:
    usable = [
        p
        for p in pods
        if p.gpus > 0 and p.duration and _fits_somewhere(cluster, p.gpus, p.cpu_milli, p.memory_mib)
    ]
    if not usable or target_gpus <= 0:
        return []
    usable.sort(key=lambda p: (p.created, p.name))
    # The sparse first ~110 days of the trace would be long holes: keep the dense tail (99 % of pods).
    usable = usable[len(usable) // 100 :]
    weight = [p.gpus * min(p.duration, horizon) for p in usable]
    mean_gpu_seconds = sum(weight) / len(usable)
    rate = target_gpus / mean_gpu_seconds  # arrivals per second (Little's law)
    gaps = [b.created - a.created for a, b in pairwise(usable)]
    mean_gap = (sum(gaps) / len(gaps)) if gaps and sum(gaps) > 0 else 1.0
    scale = 1.0 / (rate * mean_gap)
    jobs: list[JobSpec] = []
    # The steady state at the start: pods drawn in proportion to the time they occupy, each part-way done.
    held = 0
    start = rng.choices(range(len(usable)), weights=weight, k=1)[0]
    for i in rng.choices(range(len(usable)), weights=weight, k=len(usable)):
        if held >= target_gpus:
            break
        pod = usable[i]
        held += pod.gpus
        jobs.append(
            _pod_job(
                pod, f"{pod.name}-s{len(jobs)}", 0.0, min(pod.duration, horizon) * rng.random() + 1, True
            )
        )
    # Then the stream, in the trace's order from a seeded starting point, at the compressed pace.
    at, i, lap = 0.0, start, 0
    while True:
        nxt = (i + 1) % len(usable)
        gap = usable[nxt].created - usable[i].created if nxt else mean_gap
        at += gap * scale
        i, lap = nxt, lap + (nxt == 0)
        if at >= horizon:
            break
        pod = usable[i]
        jobs.append(_pod_job(pod, f"{pod.name}-a{lap}", at, float(pod.duration), False))
    return jobs


def _pod_job(pod: TracePod, name: str, arrival: float, work: float, initial: bool) -> JobSpec:
    return JobSpec(
        name=name,
        namespace="trace",
        kind="background",
        tier=pod.qos,
        priority=QOS_PRIORITY[pod.qos],
        size=1,
        min_count=1,
        pod_gpus=pod.gpus,
        pod_cpu_milli=pod.cpu_milli,
        pod_memory_mib=pod.memory_mib,
        disruption="single",
        topology=False,
        arrival=arrival,
        work=work,
        initial=initial,
    )


class _Room:
    """How many pods of each size the cluster and its largest rack hold (for drawing gangs that fit)."""

    def __init__(self, cluster: list[Node]) -> None:
        self.cap = max(16, sum(n.gpus for n in cluster) // 8)  # no gang asks for more than 1/8 of it
        self.slots = {g: sum(n.gpus // g for n in cluster) for g, _ in POD_GPUS}
        self.rack = {}
        for g, _ in POD_GPUS:
            per_rack: dict[str, int] = {}
            for n in cluster:
                per_rack[n.rack] = per_rack.get(n.rack, 0) + n.gpus // g
            self.rack[g] = max(per_rack.values(), default=0)

    def holds_a_gang(self) -> bool:
        """Whether some gang shape fits (a handful of small nodes may hold none: then no gang is drawn)."""
        return any(s * g <= self.cap and self.slots[g] >= 2 * s for s, _ in SIZES for g, _ in POD_GPUS)


def _draw_gang(rng: random.Random, room: _Room) -> tuple:
    while True:
        size = rng.choices([s for s, _ in SIZES], weights=[w for _, w in SIZES])[0]
        pod_gpus = rng.choices([g for g, _ in POD_GPUS], weights=[w for _, w in POD_GPUS])[0]
        if size * pod_gpus <= room.cap and room.slots[pod_gpus] >= 2 * size:
            break
    tier, priority, _ = rng.choices(TIERS, weights=[w for *_, w in TIERS])[0]
    low, high = WORK_HOURS
    work = 3600 * math.exp(rng.uniform(math.log(low), math.log(high)))
    mode = "all" if rng.random() < ALL_SHARE else "single"
    topology = rng.random() < TOPOLOGY_SHARE and room.rack[pod_gpus] >= size
    return size, pod_gpus, tier, priority, work, mode, topology


def _gangs(cluster: list[Node], horizon: float, target_gpus: float, rng: random.Random) -> list[JobSpec]:
    if target_gpus <= 0:
        return []
    room = _Room(cluster)
    if not room.holds_a_gang():
        return []
    sample = random.Random(rng.random())
    drawn = [_draw_gang(sample, room) for _ in range(2000)]
    mean = sum(d[0] * d[1] * min(d[4], horizon) for d in drawn) / len(drawn)
    rate = target_gpus / mean
    jobs: list[JobSpec] = []
    held = 0.0
    while held < target_gpus:  # the gangs already running at the start
        d = _draw_gang(rng, room)
        held += d[0] * d[1]
        jobs.append(_gang_job(len(jobs), d, 0.0, d[4] * rng.random() + 60, True))
    at = rng.expovariate(rate)
    while at < horizon:
        d = _draw_gang(rng, room)
        jobs.append(_gang_job(len(jobs), d, at, d[4], False))
        at += rng.expovariate(rate)
    return jobs


def _gang_job(index: int, drawn: tuple, arrival: float, work: float, initial: bool) -> JobSpec:
    size, pod_gpus, tier, priority, _, mode, topology = drawn
    return JobSpec(
        name=f"gang-{index:05d}",
        namespace="train",
        kind="gang",
        tier=tier,
        priority=priority,
        size=size,
        min_count=size if mode == "all" else max(1, math.ceil(size / 2)),
        pod_gpus=pod_gpus,
        pod_cpu_milli=CPU_MILLI_PER_GPU * pod_gpus,
        pod_memory_mib=MEMORY_MIB_PER_GPU * pod_gpus,
        disruption=mode,
        topology=topology,
        arrival=arrival,
        work=work,
        initial=initial,
    )
