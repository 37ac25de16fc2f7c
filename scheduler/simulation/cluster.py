"""``SimulatedCluster``: the demo's embedded cluster, implementing ``scheduler.cluster.Cluster``.

A seeded, deterministic world: GPU nodes in racks, gangs of four priority tiers submitted by a
workload generator, a first-fit binder standing in for kube-scheduler, controllers that finish gangs
and recreate evicted pods. The world only moves in ``tick()``: the same seed and the same calls give
the same gangs, pods and placements (and, with a ``SteppedClock``, byte-identical objects). All
public methods take one lock: Celery tasks, the ticker and websocket consumers call in from
different threads. The world's state, its building and its placing are ``world.py``.
"""

from __future__ import annotations

import copy
import zlib
from typing import Any

from scheduler.cluster import (
    EVICTING,
    NOTICE_DEADLINE_ANNOTATION,
    PREEMPTION_CONDITION,
    VICTIMS_EVICTED,
    ClusterError,
    ClusterEvent,
    EvictionResult,
    KubeObject,
)
from scheduler.engine.checkpoints import CHECKPOINT_ANNOTATION
from scheduler.engine.gangkey import GangKey
from scheduler.simulation import dra as sim_dra
from scheduler.simulation import objects
from scheduler.simulation import queues as sim_queues
from scheduler.simulation.catalog import TIERS
from scheduler.simulation.state import Gang, condition, rfc3339, stable_uid, upsert_condition
from scheduler.simulation.world import MAX_PENDING_GANGS, MAX_WAIT_TICKS, World

PODGROUP_API_VERSION = "scheduling.k8s.io/v1beta1"
# The demo's lost members (``SimulatedCluster._lose_a_member``): the first this many ticks in, and the gang
# stays short of it for LOST_TICKS.
LOSS_OFFSET = 15
LOST_TICKS = 30
# A gang that checkpoints "every" so often saves each this many ticks (5 minutes at the demo's 2 s).
CHECKPOINT_TICKS = 150


class SimulatedCluster(World):
    name = "simulated"
    # Every this many ticks a running gang loses a member (0: never; the demo sets it, GANGWEB_SIM_LOSS_TICKS).
    loss_ticks = 0

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
            return sim_queues.publish(self.queues, out, self._total_gpus, rfc3339(self._started_at))

    def get_pod(self, namespace: str, name: str) -> KubeObject | None:
        with self._lock:
            pod = self._pods.get(f"{namespace}/{name}")
            if pod is None:
                return None
            gang = self._gangs[pod.gang_key]
            obj = sim_queues.mark_pod(self.queues, objects.pod_object(pod, gang), gang.name)
            return sim_dra.pod_as_dra(obj, pod)[0] if self.devices == "dra" else obj

    def pods_of(self, gang_key: GangKey) -> tuple[int, list[KubeObject]]:
        """One gang's minCount and pod objects (the demo reviews them through the webhook as created)."""
        with self._lock:
            gang = self._gangs.get(gang_key)
            if gang is None:
                return 0, []
            return gang.min_count, [objects.pod_object(pod, gang) for pod in self._gang_pods(gang_key)]

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
                if self._evicting_for is not None and pod.node is not None:
                    self._reserved[pod.node] = (self._evicting_for, self._tick_count)
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

    def mark_disruption_target(
        self, namespace: str, name: str, message: str, *, uid: str | None = None
    ) -> None:
        """Set ``DisruptionTarget=True`` on the pod; a pod already gone needs no mark."""
        with self._lock:
            pod = self._pods.get(f"{namespace}/{name}")
            if pod is None:
                return
            if uid and uid != pod.uid:
                raise ClusterError(f"pod {namespace}/{name} is another pod now (UID {pod.uid}, not {uid})")
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

    def annotate(
        self, api_version: str, kind: str, namespace: str, name: str, annotations: dict[str, str | None]
    ) -> bool:
        """Merge ``annotations`` into a PodGroup's (None removes a key); the simulation's pods keep none, so
        a pod is only looked up. False when the object is gone."""
        with self._lock:
            if kind == "Pod":
                return f"{namespace}/{name}" in self._pods
            gang = self._gangs.get(f"{namespace}/{name}")
            if kind != "PodGroup" or gang is None:
                return False
            for key, value in annotations.items():
                if value is None:
                    gang.annotations.pop(key, None)
                else:
                    gang.annotations[key] = value
            gang.resource_version = self._next_rv()
            return True

    def set_podgroup_condition(
        self, namespace: str, name: str, type_: str, status: str, reason: str, message: str
    ) -> None:
        """Upsert a PodGroup status condition; a PodGroup already gone is left alone."""
        with self._lock:
            gang = self._gangs.get(f"{namespace}/{name}")
            if type_ == PREEMPTION_CONDITION:  # gangweb evicts for this gang until the next condition
                self._evicting_for = gang.key if gang is not None and reason == EVICTING else None
            if gang is not None and upsert_condition(
                gang.conditions, condition(type_, status, reason, message, self._now)
            ):
                gang.resource_version = self._next_rv()

    def submit(self, gang: Gang) -> None:
        """A gang that arrives now from outside the workload generator (the demo's scene, ``scene.py``)."""
        with self._lock:
            gang.created, gang.queued_tick = self._now, self._tick_count
            self._submit(gang)
            self._changes.append(self._change("gang-submitted", gang))

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
            self._save_checkpoints()
            self._lose_a_member()
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

    def _save_checkpoints(self) -> None:
        """What the running gangs' workloads do (examples/notice/train.py, simulated): an "every" gang saves
        each ``CHECKPOINT_TICKS``, a "notice" gang on the tick after gangweb gives it notice, a "never" gang
        never; each save is the PodGroup's ``gangweb.io/last-checkpoint``."""
        for gang in self._gangs.values():
            if gang.started_tick is None or gang.checkpoints == "never":
                continue
            last = gang.annotations.get(CHECKPOINT_ANNOTATION, "")
            deadline = gang.annotations.get(NOTICE_DEADLINE_ANNOTATION)
            if gang.checkpoints == "every":
                due = (self._tick_count - gang.started_tick) % CHECKPOINT_TICKS == 0
            else:  # once per notice
                due = bool(deadline) and gang.answered != deadline
            if not due or self._tick_count == gang.started_tick:
                continue
            gang.annotations[CHECKPOINT_ANNOTATION] = rfc3339(self._now)
            gang.answered = deadline or ""
            gang.resource_version = self._next_rv()
            if last != gang.annotations[CHECKPOINT_ANNOTATION]:
                self._changes.append(
                    self._change("gang-checkpointed", gang, onNotice=gang.checkpoints == "notice")
                )

    def _recreate_evicted_pods(self) -> None:
        """What the gangs' controllers do: bring the pod count back to ``size``.

        An ``all`` gang that lost any pod restarts as a whole (its remaining pods are deleted too), as
        JobSet-style controllers do; a ``single`` gang only replaces the pods it lost.
        """
        for gang in list(self._gangs.values()):
            pods = self._gang_pods(gang.key)
            if len(pods) == gang.size or gang.stuck_until > self._tick_count:
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

    def _lose_a_member(self) -> None:
        """Every ``loss_ticks`` ticks a running gang of several pods loses one (its node's kubelet killed it)
        and its controller does not replace it for ``LOST_TICKS``: a broken gang the dashboard shows, its
        GPUs counted, reaped where the reaper evicts (docs/idle.md). Chosen without the world's random
        stream, which the rest of the demo's seeded world keeps to itself."""
        if not self.loss_ticks or self._tick_count % self.loss_ticks != LOSS_OFFSET % self.loss_ticks:
            return
        running = sorted(
            (g for g in self._gangs.values() if g.started is not None and g.min_count >= 2 and g.size >= 2),
            key=lambda g: g.key,
        )
        if not running:
            return
        gang = running[(self._tick_count // self.loss_ticks) % len(running)]
        victim = max(self._gang_pods(gang.key), key=lambda p: p.index)
        self._delete_pod(victim)
        gang.stuck_until = self._tick_count + LOST_TICKS
        gang.resource_version = self._next_rv()
        self._changes.append(self._change("member-lost", gang, pod=victim.key))

    def dcgm_series(self) -> list[tuple[str, dict[str, str], float]]:
        """What dcgm-exporter would expose for each GPU in use: ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` with its
        labels. Training gangs are busy; a gang of one pod of one or two GPUs (a notebook) idles one time
        in three; a gang short of members waits on them and does nothing."""
        with self._lock:
            out = []
            for node in self._nodes:
                for index, key in enumerate(node.slots):
                    pod = self._pods.get(key) if key is not None else None
                    if key is None or pod is None:
                        continue
                    gang = self._gangs[pod.gang_key]
                    short = len(self._gang_pods(gang.key)) < gang.min_count
                    notebook = (
                        gang.size == 1 and gang.pod_gpus <= 2 and zlib.crc32(gang.key.encode()) % 3 == 0
                    )
                    busy = (
                        0.0 if short or notebook else 0.6 + (zlib.crc32(f"{key}/{index}".encode()) % 35) / 100
                    )
                    labels = {
                        "gpu": str(index),
                        "UUID": f"GPU-{stable_uid('gpu', node.name, str(index))}",
                        "device": f"nvidia{index}",
                        "modelName": "NVIDIA H100 80GB HBM3",
                        "Hostname": node.name,
                        "container": "main",
                        "namespace": gang.namespace,
                        "pod": key.partition("/")[2],
                    }
                    out.append(("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, round(busy, 2)))
            return out

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
        # Within a tier, a gang gangweb has just evicted for goes first: the room was made for it (what a
        # nominated node is to kube-scheduler), and an earlier gang of its tier must not take it.
        waiting.sort(key=lambda g: (-g.tier.value, not _room_made_for(g), g.queued, g.key))
        for gang in waiting:
            bound = self._try_bind(gang)
            if bound:
                self._changes.append(self._change("gang-bound", gang, pods=bound))
            elif gang.started is None:
                self._mark_unschedulable(gang)


def _room_made_for(gang: Gang) -> bool:
    return any(
        c["type"] == PREEMPTION_CONDITION and c["reason"] in (EVICTING, VICTIMS_EVICTED)
        for c in gang.conditions
    )


def _uid_conflict(wanted: str, actual: str) -> str:
    return f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}"
