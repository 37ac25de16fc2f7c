"""The simulated world's state and how it is built and placed: nodes in racks, gangs and their pods,
the first-fit binder's bindings. ``SimulatedCluster`` (``cluster.py``) adds the ``Cluster`` protocol and
the controllers that move the world each tick.

Pods are indexed by gang, the fill keeps running counts, and the binder is linear in the nodes
(``binder.py``), so building a large world is not quadratic (docs/measurements.md).
"""

from __future__ import annotations

import bisect
import math
import random
import threading
from collections import deque
from typing import Any

from scheduler.cluster import ClusterEvent, KubeObject
from scheduler.engine.gangkey import GangKey
from scheduler.simulation import dra as sim_dra
from scheduler.simulation import queues as sim_queues
from scheduler.simulation.binder import first_fit
from scheduler.simulation.catalog import NODES_PER_RACK, RACKS_PER_ZONE
from scheduler.simulation.clock import SteppedClock, WallClock
from scheduler.simulation.state import Gang, SimNode, SimPod, condition, upsert_condition
from scheduler.simulation.workload import WorkloadGenerator

SCHEDULED = "PodGroupInitiallyScheduled"
# Pending gangs are dropped by their owners after this many ticks, which keeps the queue bounded.
MAX_WAIT_TICKS = 240
MAX_PENDING_GANGS = 8
INITIAL_WAITING_GANGS = 3
RESERVE_TICKS = 15
# Mean GPU-ticks of a submitted gang (from the catalog's tier mix), used to set an arrival rate that
# keeps the cluster a little over-subscribed: some gangs always wait, as on real clusters.
_MEAN_GANG_GPU_TICKS = 1950
_TARGET_DEMAND = 1.3


class World:
    def __init__(
        self,
        nodes: int = 64,
        seed: int = 7,
        *,
        fill: float = 0.85,
        clock: WallClock | SteppedClock | None = None,
        devices: str = "extended",
        mig: bool = True,
        queues: str = "none",
    ) -> None:
        """``clock`` dates the objects: the wall clock by default, ``SteppedClock()`` for identical snapshots.
        ``devices``: GPUs as the ``nvidia.com/gpu`` extended resource, or ``"dra"`` (``simulation/dra.py``;
        with ``mig`` a few of its nodes have GPUs in MIG mode). ``queues``: the queue manager its team
        namespaces run under (``simulation/queues.py``), or ``"none"``."""
        if nodes < 1:
            raise ValueError(f"a simulated cluster needs at least one node, got {nodes}")
        if devices not in sim_dra.DEVICES:
            raise ValueError(
                f"simulated devices must be one of {', '.join(sim_dra.DEVICES)}, got {devices!r}"
            )
        self.devices = devices
        self.queues = sim_queues.check(queues)
        self._mig = mig and devices == "dra"
        self.seed = seed
        self._lock = threading.RLock()
        self._rng = random.Random(seed)
        self._workload = WorkloadGenerator(self._rng)
        self._clock = clock or WallClock()
        self._now = self._clock.start()
        self._started_at = self._now
        self._tick_count = 0
        self._resource_version = 0
        self._nodes = [self._new_node(i) for i in range(nodes)]
        self._total_gpus = sum(len(n.slots) for n in self._nodes)  # nodes and their GPUs never change
        # Indices of the nodes with a free GPU, in order: the binder's first fit scans only those (at
        # 85 % allocated, most nodes are full, and scanning them all per gang was the other quadratic).
        self._index_of = {n.name: i for i, n in enumerate(self._nodes)}
        self._room = list(range(nodes))
        # Nodes gangweb freed for a gang (node -> gang key, tick): what a nominated node is to kube-scheduler.
        # Others may not bind there while that gang waits, for RESERVE_TICKS (``SimulatedCluster.evict``).
        self._reserved: dict[str, tuple[str, int]] = {}
        self._evicting_for: str | None = None
        self._node_by_name = {n.name: n for n in self._nodes}
        self._gangs: dict[str, Gang] = {}
        self._pods: dict[str, SimPod] = {}
        self._pods_of: dict[str, dict[str, SimPod]] = {}  # gang key -> its pods, by pod key
        self._changes: list[dict[str, Any]] = []
        self._events: deque[ClusterEvent] = deque(maxlen=500)
        # Objects written through ``create_object`` (PodGroups the ensurer creates, owners tests add), kept
        # as given and shown in snapshots; the simulated world itself does not act on them.
        self._created: dict[tuple[str, str, str, str], KubeObject] = {}
        self._arrival_rate = _TARGET_DEMAND * self.total_gpus / _MEAN_GANG_GPU_TICKS
        self._fill(fill)

    # --- construction ----------------------------------------------------------------------

    def _next_rv(self) -> int:
        self._resource_version += 1
        return self._resource_version

    def _new_node(self, index: int) -> SimNode:
        rack, slot = divmod(index, NODES_PER_RACK)
        zone = "abcdefghijklmnopqrstuvwxyz"[(rack // RACKS_PER_ZONE) % 26]
        return SimNode(
            name=f"gpu-r{rack}-n{slot:02d}",
            rack=f"rack-{rack}",
            zone=f"zone-{zone}",
            slots=[None] * sim_dra.whole_gpus(index, self._mig),
            created=self._now - 30 * 86400,
            resource_version=self._next_rv(),
        )

    def _fill(self, fill: float) -> None:
        """Start from a busy cluster: gangs already running at staggered ages, and a few that wait.

        Gangs keep arriving until the cluster is ``fill`` allocated and the first few no longer fit:
        those wait from the start, the situation gangweb exists for.
        """
        # Running counts: the allocated GPUs and the waiting gangs would cost a pass over every node and
        # gang per gang submitted (quadratic in the nodes).
        allocated, waiting, target = self.allocated_gpus, len(self._waiting()), fill * self.total_gpus
        for _ in range(20 * len(self._nodes)):
            if allocated >= target and waiting >= INITIAL_WAITING_GANGS:
                break
            waited = self._rng.randint(1, 20)
            gang = self._workload.new_gang(self._ticks_ago(waited), -waited, self.total_gpus)
            self._submit(gang)
            if (bound := self._try_bind(gang)) is not None:
                allocated += len(bound) * gang.pod_gpus
                # Back-date the start so the initial gangs finish at different times.
                gang.started_tick = -self._rng.randint(0, int(gang.run_ticks * 0.9))
                gang.started = gang.created = self._ticks_ago(-gang.started_tick)
                gang.queued, gang.queued_tick = gang.created, gang.started_tick
                for pod in self._gang_pods(gang.key):
                    pod.started = pod.created = gang.started
            elif waiting < INITIAL_WAITING_GANGS and allocated >= target:  # this gang is the next to wait
                self._mark_unschedulable(gang)
                waiting += 1
            else:
                self._drop(gang)
        self._changes.clear()

    @property
    def total_gpus(self) -> int:
        return self._total_gpus

    @property
    def allocated_gpus(self) -> int:
        return sum(len(n.slots) - n.free_gpus for n in self._nodes)

    @property
    def now(self) -> float:
        return self._now

    def _ticks_ago(self, ticks: int) -> float:
        return float(int(self._now - ticks * self._clock.seconds_per_tick))

    # --- mechanics -------------------------------------------------------------------------

    def _poisson(self, rate: float) -> int:
        # Knuth's method: fine for the small rates used here.
        limit, k, p = math.exp(-rate), 0, self._rng.random()
        while p > limit:
            k += 1
            p *= self._rng.random()
        return k

    def _change(self, type_: str, gang: Gang, **extra: Any) -> dict[str, Any]:
        return {
            "type": type_,
            "podGroup": gang.key,
            "priorityClass": gang.tier.priority_class,
            "priority": gang.tier.value,
            "gpus": gang.gpus,
            **extra,
        }

    def _waiting(self) -> list[Gang]:
        return [g for g in self._gangs.values() if g.started is None]

    def _gang_pods(self, gang_key: GangKey) -> list[SimPod]:
        return list(self._pods_of.get(gang_key, {}).values())

    def _healthy(self, gang: Gang) -> int:
        return sum(1 for p in self._gang_pods(gang.key) if p.running)

    def _submit(self, gang: Gang) -> None:
        gang.queued = gang.created
        gang.resource_version = self._next_rv()
        self._gangs[gang.key] = gang
        for index in range(gang.size):
            self._new_pod(gang, index, created=gang.created)

    def _new_pod(self, gang: Gang, index: int, created: float | None = None) -> SimPod:
        name = f"{gang.name}-{index}" if gang.attempt == 0 else f"{gang.name}-r{gang.attempt}-{index}"
        pod = SimPod(
            gang.namespace,
            name,
            gang.key,
            index,
            created=self._now if created is None else created,
            resource_version=self._next_rv(),
        )
        self._pods[pod.key] = pod
        self._pods_of.setdefault(gang.key, {})[pod.key] = pod
        return pod

    def _delete_pod(self, pod: SimPod) -> None:
        if pod.node is not None:
            self._node_by_name[pod.node].release(pod.key)
            index = self._index_of[pod.node]
            at = bisect.bisect_left(self._room, index)
            if at == len(self._room) or self._room[at] != index:
                self._room.insert(at, index)
        self._pods.pop(pod.key, None)
        mine = self._pods_of.get(pod.gang_key)
        if mine is not None:
            mine.pop(pod.key, None)
            if not mine:
                del self._pods_of[pod.gang_key]

    def _drop(self, gang: Gang) -> None:
        for pod in self._gang_pods(gang.key):
            self._delete_pod(pod)
        self._gangs.pop(gang.key, None)

    def _try_bind(self, gang: Gang) -> list[str] | None:
        """Bind what fits of the gang's pending pods; the bound pod keys, or None."""
        pods = self._gang_pods(gang.key)
        pending = sorted((p for p in pods if not p.running), key=lambda p: p.index)
        running = [p for p in pods if p.running]
        # A node without a free GPU fits no pod that asks for one; a gang with pods running is pinned to
        # their racks, which the binder reads off the nodes, so it is offered every node.
        offered = self._nodes if running or gang.pod_gpus < 1 else [self._nodes[i] for i in self._room]
        if self._reserved:
            held = self._held_for_others(gang.key)
            offered = [n for n in offered if n.name not in held] if held else offered
        placement = first_fit(gang, pending, running, offered) if pending else None
        if not placement:
            return None
        for pod in pending:
            node_name = placement.get(pod.key)
            if node_name is None:
                continue
            node = self._node_by_name[node_name]
            pod.gpu_slots = node.take(pod.key, gang.pod_gpus)
            if not node.free_gpus:
                self._room.remove(self._index_of[node_name])
            pod.node, pod.started = node_name, self._now
            pod.conditions = [condition("PodScheduled", "True", "", "", self._now)]
            pod.resource_version = self._next_rv()
        if gang.started is None:
            gang.started, gang.started_tick = self._now, self._tick_count
        upsert_condition(
            gang.conditions,
            condition(SCHEDULED, "True", "Scheduled", "all pods of the gang are bound", self._now),
        )
        gang.resource_version = self._next_rv()
        return sorted(placement)

    def _held_for_others(self, gang_key: GangKey) -> set[str]:
        """Nodes reserved for another gang that still waits (stale reservations are dropped here)."""
        for node, (key, tick) in list(self._reserved.items()):
            other = self._gangs.get(key)
            if other is None or other.started is not None or self._tick_count - tick > RESERVE_TICKS:
                del self._reserved[node]
        return {node for node, (key, _) in self._reserved.items() if key != gang_key}

    def _mark_unschedulable(self, gang: Gang) -> None:
        free = self.total_gpus - self.allocated_gpus
        where = "in any one rack" if gang.topology else "in the cluster"
        why = (
            f"only {free} GPUs free"
            if free < gang.min_count * gang.pod_gpus
            else f"{free} GPUs free but fragmented"
        )
        message = f"{gang.min_count} pods of {gang.pod_gpus} nvidia.com/gpu each do not fit {where} ({why})"
        if upsert_condition(
            gang.conditions, condition(SCHEDULED, "False", "Unschedulable", message, self._now)
        ):
            gang.resource_version = self._next_rv()
        for pod in self._gang_pods(gang.key):
            if not pod.running and upsert_condition(
                pod.conditions, condition("PodScheduled", "False", "Unschedulable", message, self._now)
            ):
                pod.resource_version = self._next_rv()
