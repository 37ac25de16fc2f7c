"""``SimulatedCluster``: the demo's embedded cluster, implementing ``scheduler.cluster.Cluster``.

A seeded, deterministic world: GPU nodes in racks, gangs of four priority tiers submitted by a
workload generator, a first-fit binder standing in for kube-scheduler, controllers that finish gangs
and recreate evicted pods. The world only moves in ``tick()``: the same seed and the same calls give
the same gangs, pods and placements (and, with a ``SteppedClock``, byte-identical objects). All
public methods take one lock: Celery tasks, the ticker and websocket consumers call in from
different threads.
"""

from __future__ import annotations

import copy
import math
import random
import threading
from collections import deque
from typing import Any

from scheduler.cluster import ClusterEvent, EvictionResult, KubeObject
from scheduler.simulation import dra as sim_dra
from scheduler.simulation import objects
from scheduler.simulation.binder import first_fit
from scheduler.simulation.catalog import NODES_PER_RACK, RACKS_PER_ZONE, TIERS
from scheduler.simulation.clock import SteppedClock, WallClock
from scheduler.simulation.state import (
    SimGang,
    SimNode,
    SimPod,
    condition,
    rfc3339,
    stable_uid,
    upsert_condition,
)
from scheduler.simulation.workload import WorkloadGenerator

SCHEDULED = "PodGroupInitiallyScheduled"
PODGROUP_API_VERSION = "scheduling.k8s.io/v1beta1"
# Pending gangs are dropped by their owners after this many ticks, which keeps the queue bounded.
MAX_WAIT_TICKS = 240
MAX_PENDING_GANGS = 8
INITIAL_WAITING_GANGS = 3
# Mean GPU-ticks of a submitted gang (from the catalog's tier mix), used to set an arrival rate that
# keeps the cluster a little over-subscribed: some gangs always wait, as on real clusters.
_MEAN_GANG_GPU_TICKS = 1950
_TARGET_DEMAND = 1.3


class SimulatedCluster:
    name = "simulated"

    def __init__(
        self,
        nodes: int = 64,
        seed: int = 7,
        *,
        fill: float = 0.85,
        clock: WallClock | SteppedClock | None = None,
        devices: str = "extended",
        mig: bool = True,
    ) -> None:
        """``clock`` dates the objects: the wall clock by default, ``SteppedClock()`` for identical snapshots.
        ``devices``: GPUs as the ``nvidia.com/gpu`` extended resource, or ``"dra"`` (``simulation/dra.py``; with ``mig`` a few of its nodes have GPUs in MIG mode)."""
        if nodes < 1:
            raise ValueError(f"a simulated cluster needs at least one node, got {nodes}")
        if devices not in sim_dra.DEVICES:
            raise ValueError(
                f"simulated devices must be one of {', '.join(sim_dra.DEVICES)}, got {devices!r}"
            )
        self.devices = devices
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
        self._node_by_name = {n.name: n for n in self._nodes}
        self._gangs: dict[str, SimGang] = {}
        self._pods: dict[str, SimPod] = {}
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
        for _ in range(20 * len(self._nodes)):
            if (
                self.allocated_gpus >= fill * self.total_gpus
                and len(self._waiting()) >= INITIAL_WAITING_GANGS
            ):
                break
            waited = self._rng.randint(1, 20)
            gang = self._workload.new_gang(self._ticks_ago(waited), -waited, self.total_gpus)
            self._submit(gang)
            if self._try_bind(gang) is not None:
                # Back-date the start so the initial gangs finish at different times.
                gang.started_tick = -self._rng.randint(0, int(gang.run_ticks * 0.9))
                gang.started = gang.created = self._ticks_ago(-gang.started_tick)
                gang.queued, gang.queued_tick = gang.created, gang.started_tick
                for pod in self._gang_pods(gang.key):
                    pod.started = pod.created = gang.started
            elif (
                len(self._waiting()) <= INITIAL_WAITING_GANGS
                and self.allocated_gpus >= fill * self.total_gpus
            ):
                self._mark_unschedulable(gang)
            else:
                self._drop(gang)
        self._changes.clear()

    @property
    def total_gpus(self) -> int:
        return sum(len(n.slots) for n in self._nodes)

    @property
    def allocated_gpus(self) -> int:
        return sum(len(n.slots) - n.free_gpus for n in self._nodes)

    @property
    def now(self) -> float:
        return self._now

    def _ticks_ago(self, ticks: int) -> float:
        return float(int(self._now - ticks * self._clock.seconds_per_tick))

    # --- Cluster protocol ------------------------------------------------------------------

    def snapshot_objects(self) -> list[KubeObject]:
        with self._lock:
            out: list[KubeObject] = [objects.node_object(n) for n in self._nodes]
            out += [objects.priority_class_object(t, self._started_at - 30 * 86400) for t in TIERS]
            for gang in self._gangs.values():
                out.append(objects.podgroup_object(gang))
                if gang.pdb_min_available is not None:
                    out.append(objects.pdb_object(gang, self._healthy(gang), self._now))
            out += [objects.pod_object(p, self._gangs[p.gang_key]) for p in self._pods.values()]
            if self.devices == "dra":
                out = sim_dra.publish(out, self._nodes, self._pods)
            out += [copy.deepcopy(o) for o in self._created.values()]
            return out

    def get_pod(self, namespace: str, name: str) -> KubeObject | None:
        with self._lock:
            pod = self._pods.get(f"{namespace}/{name}")
            if pod is None:
                return None
            obj = objects.pod_object(pod, self._gangs[pod.gang_key])
            return sim_dra.pod_as_dra(obj, pod)[0] if self.devices == "dra" else obj

    def get_object(self, api_version: str, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        with self._lock:
            found = self._created.get((api_version, kind, namespace or "", name))
            if found is not None:
                return copy.deepcopy(found)
            if (api_version, kind) == (
                PODGROUP_API_VERSION,
                "PodGroup",
            ) and f"{namespace}/{name}" in self._gangs:
                return objects.podgroup_object(self._gangs[f"{namespace}/{name}"])
            if (api_version, kind) == ("v1", "Pod"):
                return self.get_pod(namespace or "", name)
            return None

    def create_object(self, obj: KubeObject) -> bool:
        """Store ``obj`` as a real API server would (uid, resourceVersion, creation time); False when an
        object of that kind and name exists already, the simulation's own PodGroups included."""
        meta = obj.get("metadata") or {}
        key = (
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            meta.get("namespace") or "",
            str(meta.get("name") or ""),
        )
        if not key[3]:
            raise ValueError(f"{key[1]} without metadata.name cannot be created")
        with self._lock:
            if self.get_object(key[0], key[1], key[2] or None, key[3]) is not None:
                return False
            stored = copy.deepcopy(obj)
            stored_meta = stored.setdefault("metadata", {})
            stored_meta.update(
                uid=stable_uid(key[1], key[2], key[3], int(self._now)),
                resourceVersion=str(self._next_rv()),
                creationTimestamp=rfc3339(self._now),
            )
            self._created[key] = stored
            return True

    def evict(
        self, namespace: str, name: str, *, uid: str | None = None, dry_run: bool = False
    ) -> EvictionResult:
        with self._lock:
            pod = self._pods.get(f"{namespace}/{name}")
            if pod is None:
                return EvictionResult(namespace, name, 404, f'pods "{name}" not found', dry_run)
            if uid and uid != pod.uid:
                return EvictionResult(namespace, name, 409, _uid_conflict(uid, pod.uid), dry_run)
            gang = self._gangs[pod.gang_key]
            # As the API server does, budgets only guard running pods; pending ones just go.
            if (
                pod.running
                and gang.pdb_min_available is not None
                and self._healthy(gang) - gang.pdb_min_available <= 0
            ):
                return EvictionResult(
                    namespace,
                    name,
                    429,
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    dry_run,
                )
            if not dry_run:
                self._delete_pod(pod)
                self._changes.append(self._change("pod-evicted", gang, pod=pod.key, node=pod.node))
            return EvictionResult(namespace, name, 201, "", dry_run)

    def delete_pod(self, namespace: str, name: str, *, uid: str, dry_run: bool = False) -> EvictionResult:
        with self._lock:
            pod = self._pods.get(f"{namespace}/{name}")
            if pod is None:
                return EvictionResult(namespace, name, 404, f'pods "{name}" not found', dry_run)
            if uid != pod.uid:
                return EvictionResult(namespace, name, 409, _uid_conflict(uid, pod.uid), dry_run)
            if not dry_run:
                self._delete_pod(pod)
                self._changes.append(
                    self._change("pod-deleted", self._gangs[pod.gang_key], pod=pod.key, node=pod.node)
                )
            return EvictionResult(namespace, name, 200, "", dry_run)

    def mark_disruption_target(self, namespace: str, name: str, message: str) -> None:
        """Set ``DisruptionTarget=True`` on the pod; a pod already gone needs no mark."""
        with self._lock:
            pod = self._pods.get(f"{namespace}/{name}")
            if pod is None:
                return
            new = condition("DisruptionTarget", "True", "PreemptionByScheduler", message, self._now)
            if upsert_condition(pod.conditions, new):
                pod.resource_version = self._next_rv()

    def record_event(self, event: ClusterEvent) -> None:
        with self._lock:
            self._events.append(event)
            self._changes.append(
                {
                    "type": "event",
                    "reason": event.reason,
                    "message": event.message,
                    "object": f"{event.namespace}/{event.involved_name}",
                }
            )

    def set_podgroup_condition(
        self, namespace: str, name: str, type_: str, status: str, reason: str, message: str
    ) -> None:
        """Upsert a PodGroup status condition; a PodGroup already gone is left alone."""
        with self._lock:
            gang = self._gangs.get(f"{namespace}/{name}")
            if gang is not None and upsert_condition(
                gang.conditions, condition(type_, status, reason, message, self._now)
            ):
                gang.resource_version = self._next_rv()

    # --- reading, for the dashboard --------------------------------------------------------

    def events(self) -> list[ClusterEvent]:
        with self._lock:
            return list(self._events)

    def device_holders(self) -> dict[str, list[str | None]]:
        """Which pod holds which GPU index of each node (``HoldsDevices``): indices stay put while a pod runs."""
        with self._lock:
            return {node.name: list(node.slots) for node in self._nodes}

    # --- time ------------------------------------------------------------------------------

    def tick(self) -> list[dict[str, Any]]:
        """Advance the clock one step: finish, restart, give up, submit, bind. Returns what changed."""
        with self._lock:
            self._tick_count += 1
            self._now = self._clock.advance(self._now)
            self._finish_done_gangs()
            self._recreate_evicted_pods()
            self._abandon_stale_gangs()
            self._submit_arrivals()
            self._bind_pending()
            changes, self._changes = self._changes, []
            return changes

    def _finish_done_gangs(self) -> None:
        for gang in list(self._gangs.values()):
            if gang.started_tick is not None and gang.started_tick + gang.run_ticks <= self._tick_count:
                self._changes.append(self._change("gang-finished", gang))
                self._drop(gang)

    def _recreate_evicted_pods(self) -> None:
        """What the gangs' controllers do: bring the pod count back to ``size``.

        An ``all`` gang that lost any pod restarts as a whole (its remaining pods are deleted too), as
        JobSet-style controllers do; a ``single`` gang only replaces the pods it lost.
        """
        for gang in list(self._gangs.values()):
            pods = self._gang_pods(gang.key)
            if len(pods) == gang.size:
                continue
            if gang.tier.disruption == "all":
                for pod in pods:
                    self._delete_pod(pod)
                pods = []
            gang.attempt += 1
            present = {p.index for p in pods}
            for index in range(gang.size):
                if index not in present:
                    self._new_pod(gang, index)
            if not pods:
                gang.started = gang.started_tick = None
                gang.queued, gang.queued_tick = self._now, self._tick_count
            self._changes.append(self._change("gang-restarted", gang, attempt=gang.attempt))

    def _abandon_stale_gangs(self) -> None:
        for gang in list(self._gangs.values()):
            if gang.started is None and self._tick_count - gang.queued_tick > MAX_WAIT_TICKS:
                self._changes.append(self._change("gang-abandoned", gang))
                self._drop(gang)

    def _submit_arrivals(self) -> None:
        for _ in range(self._poisson(self._arrival_rate)):
            if len(self._waiting()) >= MAX_PENDING_GANGS:
                return
            gang = self._workload.new_gang(self._now, self._tick_count, self.total_gpus)
            self._submit(gang)
            self._changes.append(self._change("gang-submitted", gang))

    def _bind_pending(self) -> None:
        waiting = [g for g in self._gangs.values() if any(not p.running for p in self._gang_pods(g.key))]
        waiting.sort(key=lambda g: (-g.tier.value, g.queued, g.key))
        for gang in waiting:
            bound = self._try_bind(gang)
            if bound:
                self._changes.append(self._change("gang-bound", gang, pods=bound))
            elif gang.started is None:
                self._mark_unschedulable(gang)

    # --- mechanics -------------------------------------------------------------------------

    def _poisson(self, rate: float) -> int:
        # Knuth's method: fine for the small rates used here.
        limit, k, p = math.exp(-rate), 0, self._rng.random()
        while p > limit:
            k += 1
            p *= self._rng.random()
        return k

    def _change(self, type_: str, gang: SimGang, **extra: Any) -> dict[str, Any]:
        return {
            "type": type_,
            "podGroup": gang.key,
            "priorityClass": gang.tier.priority_class,
            "priority": gang.tier.value,
            "gpus": gang.gpus,
            **extra,
        }

    def _waiting(self) -> list[SimGang]:
        return [g for g in self._gangs.values() if g.started is None]

    def _gang_pods(self, gang_key: str) -> list[SimPod]:
        return [p for p in self._pods.values() if p.gang_key == gang_key]

    def _healthy(self, gang: SimGang) -> int:
        return sum(1 for p in self._gang_pods(gang.key) if p.running)

    def _submit(self, gang: SimGang) -> None:
        gang.queued = gang.created
        gang.resource_version = self._next_rv()
        self._gangs[gang.key] = gang
        for index in range(gang.size):
            self._new_pod(gang, index, created=gang.created)

    def _new_pod(self, gang: SimGang, index: int, created: float | None = None) -> SimPod:
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
        return pod

    def _delete_pod(self, pod: SimPod) -> None:
        if pod.node is not None:
            self._node_by_name[pod.node].release(pod.key)
        self._pods.pop(pod.key, None)

    def _drop(self, gang: SimGang) -> None:
        for pod in self._gang_pods(gang.key):
            self._delete_pod(pod)
        self._gangs.pop(gang.key, None)

    def _try_bind(self, gang: SimGang) -> list[str] | None:
        """Bind what fits of the gang's pending pods; the bound pod keys, or None."""
        pods = self._gang_pods(gang.key)
        pending = sorted((p for p in pods if not p.running), key=lambda p: p.index)
        running = [p for p in pods if p.running]
        placement = first_fit(gang, pending, running, self._nodes) if pending else None
        if not placement:
            return None
        for pod in pending:
            node_name = placement.get(pod.key)
            if node_name is None:
                continue
            pod.gpu_slots = self._node_by_name[node_name].take(pod.key, gang.pod_gpus)
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

    def _mark_unschedulable(self, gang: SimGang) -> None:
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


def _uid_conflict(wanted: str, actual: str) -> str:
    return f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}"
