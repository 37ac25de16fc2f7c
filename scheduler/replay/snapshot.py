"""The replay's state as the snapshot the engine reads (real Kubernetes shapes, via the engine's builders).

Node objects never change and a bound pod's object does not change while it runs, so both are built
once and reused; a snapshot is the list of them plus the PodGroups and the pending preemptors' pods.
Timestamps count from ``FIXED_EPOCH``, so the engine's "now" and lost GPU-seconds follow the
simulated clock and a seed gives the same snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler.engine import Snapshot, parse_snapshot
from scheduler.engine import builders as b
from scheduler.engine.checkpoints import NO_INTERVALS, Intervals
from scheduler.replay.state import ReplayJob, ReplayNode, ReplayPod
from scheduler.simulation.catalog import RACK_LABEL
from scheduler.simulation.clock import FIXED_EPOCH
from scheduler.simulation.state import rfc3339

MODEL_LABEL = "gangweb.io/gpu-model"


def _stamp(seconds: float) -> str:
    return rfc3339(FIXED_EPOCH + seconds)


def node_object(node: ReplayNode) -> dict[str, Any]:
    return b.node(
        node.name,
        gpus=node.gpus,
        cpu=f"{node.cpu}m",
        memory=f"{node.memory}Mi",
        labels={RACK_LABEL: node.rack, MODEL_LABEL: node.model},
    )


def pod_object(pod: ReplayPod, now: float) -> dict[str, Any]:
    job = pod.job
    spec = job.spec
    return b.pod(
        pod.name,
        namespace=spec.namespace,
        node=pod.node,
        gpus=spec.pod_gpus,
        cpu=f"{spec.pod_cpu_milli}m",
        memory=f"{spec.pod_memory_mib}Mi",
        group=spec.name if job.is_gang else None,
        priority=spec.priority,
        start=_stamp(pod.started if pod.started is not None else now),
        created=_stamp(spec.arrival),
        uid=f"{pod.key}#{pod.attempt}",
    )


def podgroup_object(job: ReplayJob) -> dict[str, Any]:
    spec = job.spec
    return b.podgroup(
        spec.name,
        namespace=spec.namespace,
        min_count=spec.min_count,
        priority=spec.priority,
        mode=spec.disruption,
        preemption_policy="PreemptLowerPriority",
        topology=RACK_LABEL if spec.topology else None,
    )


class SnapshotBuilder:
    def __init__(self, nodes: list[ReplayNode]) -> None:
        self._nodes = [node_object(n) for n in nodes]
        self._bound: dict[int, dict[str, Any]] = {}  # id(pod) -> its object while bound
        self._groups: dict[int, dict[str, Any]] = {}

    def bound(self, pod: ReplayPod) -> None:
        self._bound[id(pod)] = pod_object(pod, pod.started or 0.0)

    def released(self, pod: ReplayPod) -> None:
        self._bound.pop(id(pod), None)

    def _group(self, job: ReplayJob) -> dict[str, Any]:
        obj = self._groups.get(id(job))
        if obj is None:
            obj = self._groups[id(job)] = podgroup_object(job)
        return obj

    def forget(self, job: ReplayJob) -> None:
        self._groups.pop(id(job), None)

    def build(
        self,
        running_gangs: Iterable[ReplayJob],
        preemptors: Iterable[ReplayJob],
        now: float,
        intervals: Intervals = NO_INTERVALS,
    ) -> Snapshot:
        objects: list[dict[str, Any]] = list(self._nodes)
        objects.extend(self._bound.values())
        seen: set[int] = set()
        for job in (*running_gangs, *preemptors):
            if id(job) not in seen:
                seen.add(id(job))
                objects.append(self._group(job))
        for job in preemptors:
            objects.extend(pod_object(p, now) for p in job.pending_pods)
        return parse_snapshot(objects, intervals)
