"""The discrete-event replay: one run of a workload under one preemption policy.

Time advances from event to event (arrivals, completions, restarts of broken gangs, samples) and a
scheduling pass runs every ``CYCLE_SECONDS`` when something changed: first every pending job in
priority order is offered to the simulated cluster's binder (``scheduler.simulation.binder.first_fit``);
then each gang still short of minCount may preempt, through ``scheduler.engine.plan`` with the policy's
engine name, at most once per backoff period. The engine's victims are evicted, the gang is bound where
the plan placed it, and each victim's job loses the work since its last checkpoint.

``none`` never preempts. ``legacy`` is the engine's per-pod, group-unaware baseline: it can leave a gang
partly evicted ("broken"): the survivors hold their GPUs and do no work until the gang is whole again,
or until its framework gives up after ``BROKEN_RESTART_SECONDS`` and its controller restarts it whole.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.engine import plan as engine_plan
from scheduler.engine.allowance import Allowance
from scheduler.engine.checkpoints import Intervals
from scheduler.replay.snapshot import SnapshotBuilder
from scheduler.replay.state import (
    Capacity,
    ReplayJob,
    ReplayNode,
    ReplayPod,
    notice_save_seconds,
    saved_progress,
)
from scheduler.replay.workload import Workload
from scheduler.simulation.binder import first_fit

POLICIES = ("gangweb", "kep5710", "legacy", "none")  # replay policy names; all but "none" are engine policies
CYCLE_SECONDS = 10.0
SAMPLE_SECONDS = 600.0
BROKEN_RESTART_SECONDS = 600.0  # a collective that lost a member times out (PyTorch's NCCL default)
BACKOFF_SECONDS = (60.0, 960.0)  # first and longest wait between two preemption attempts of a gang

FIRST_FIT_HEAD = 64

ARRIVE, COMPLETE, RESTART, SAMPLE, EVICT = 0, 1, 2, 3, 4
LOST_WORK_WINDOW = 3600.0  # the lost-work budget's rolling hour


@dataclass
class Tally:
    """What one run measured (report.py turns it into the report)."""

    policy: str
    gpus: int
    horizon: float
    busy_gpu_seconds: float = 0.0
    held_gpu_seconds: float = 0.0
    broken_gpu_seconds: float = 0.0
    # Free GPUs while a gang waits (the live figure's freeWhileWaiting, scheduler/idle.py).
    free_while_waiting_gpu_seconds: float = 0.0
    lost_gpu_seconds: dict[str, float] = field(default_factory=lambda: {"gang": 0.0, "background": 0.0})
    evictions: int = 0
    evicted_gangs_whole: int = 0
    broken: dict[str, int] = field(default_factory=lambda: {"all": 0, "single": 0})
    restarts: int = 0
    preemptions: int = 0
    plans: int = 0
    wasted_plans: int = 0  # evicted, then the gang still could not bind
    evicted_not_lower: int = 0  # victims at or above the preemptor's priority (the engine never gives one)
    plan_ms: list[float] = field(default_factory=list)
    snapshot_ms: list[float] = field(default_factory=list)
    waits: dict[str, list[float]] = field(default_factory=dict)  # tier -> seconds to first start
    never_started: dict[str, int] = field(default_factory=dict)
    finished: dict[str, int] = field(default_factory=lambda: {"gang": 0, "background": 0})
    submitted: int = 0
    samples: list[tuple[float, float, float]] = field(default_factory=list)  # (t, busy, broken) shares


class Replay:
    def __init__(
        self,
        workload: Workload,
        policy: str,
        *,
        horizon: float,
        checkpoint_seconds: float,
        notice_seconds: float = 0.0,
        lost_work_budget_gpu_hours: float | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}: choose from {', '.join(POLICIES)}")
        self.policy, self.horizon, self.checkpoint = policy, horizon, checkpoint_seconds
        # Gangs checkpoint on notice: their victims are evicted once every one has saved, or at the deadline.
        self.notice = notice_seconds
        self.budget = None if lost_work_budget_gpu_hours is None else lost_work_budget_gpu_hours * 3600
        self.lost_log: list[tuple[float, str, float]] = []  # (when, namespace, GPU-seconds lost)
        self.intervals = Intervals(default=checkpoint_seconds)
        self.nodes = [ReplayNode(n) for n in workload.nodes]
        self.by_name = {n.name: n for n in self.nodes}
        self.capacity = Capacity(self.nodes)
        self.snapshots = SnapshotBuilder(self.nodes)
        self.tally = Tally(policy, workload.gpus, horizon)
        self.jobs = [ReplayJob(spec) for spec in workload.jobs]
        self.pending: dict[int, ReplayJob] = {}
        self.bound: dict[str, ReplayPod] = {}  # pod key -> pod, for the bound pods
        self.running_gangs: dict[int, ReplayJob] = {}
        self.events: list[tuple[float, int, int, int, object]] = []
        self.seq = 0
        self.now = 0.0
        self.last = 0.0
        self.busy = self.held = self.broken_held = 0
        self.released = 0  # count of releases, so a blocked job is retried only after one
        self.dirty = True
        self._progress = progress
        for job in self.jobs:
            self._push(job.spec.arrival, ARRIVE, job)
        t = 0.0
        while t <= horizon:
            self._push(t, SAMPLE, None)
            t += SAMPLE_SECONDS

    # ---- the loop
    def run(self) -> Tally:
        next_cycle = 0.0
        while True:
            upcoming = self.events[0][0] if self.events else self.horizon
            if next_cycle <= upcoming and next_cycle <= self.horizon:
                self._advance(next_cycle)
                if self.dirty or any(self.now >= j.next_try for j in self._preemptors()):
                    self._schedule()
                if self._progress:
                    self._progress(self.now / self.horizon)
                next_cycle += CYCLE_SECONDS
                continue
            if not self.events or upcoming > self.horizon:
                break
            at, kind, _, version, subject = heapq.heappop(self.events)
            self._advance(at)
            self._handle(kind, version, subject)
        self._advance(self.horizon)
        self._finish()
        return self.tally

    def _push(self, at: float, kind: int, subject: object, version: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, kind, self.seq, version, subject))

    def _handle(self, kind: int, version: int, subject) -> None:
        if kind == SAMPLE:
            g = self.tally.gpus
            self.tally.samples.append((self.now, self.busy / g, self.broken_held / g))
        elif kind == ARRIVE:
            if not subject.spec.initial:
                self.tally.submitted += subject.is_gang
            self.pending[id(subject)] = subject
            self.dirty = True
            if subject.spec.initial:  # what runs at the start is placed before the clock moves
                self._bind_first_fit(subject)
        elif kind == COMPLETE and version == subject.version and not subject.done:
            self._settle(subject)
            subject.done = True
            self.tally.finished[subject.spec.kind] += 1
            for pod in subject.bound_pods:
                self._release(pod)
            self._update(subject)
        elif kind == EVICT:
            job, result = subject
            if not self._execute(job, result):
                self._back_off(job)
            else:
                job.next_try = self.now
        elif kind == RESTART and version == subject.version and subject.broken:
            self.tally.restarts += 1
            for pod in subject.bound_pods:
                self._release(pod)
            self._update(subject)

    def _advance(self, to: float) -> None:
        dt = to - self.last
        if dt > 0:
            self.tally.busy_gpu_seconds += self.busy * dt
            self.tally.held_gpu_seconds += self.held * dt
            self.tally.broken_gpu_seconds += self.broken_held * dt
            if any(j.is_gang and j.running < j.min_count for j in self.pending.values()):
                self.tally.free_while_waiting_gpu_seconds += self.capacity.free_gpus * dt
            self.last = to
        self.now = max(self.now, to)

    # ---- jobs
    def _settle(self, job: ReplayJob) -> None:
        job.progress = min(job.spec.work, job.progress + job.rate * (self.now - job.rate_since))
        job.rate_since = self.now

    def _update(self, job: ReplayJob) -> None:
        """After the job's running count changed: its rate, meters, completion, broken clock, queues."""
        self._settle(job)
        held = job.running * job.pod_gpus
        old_broken = job.broken_since is not None
        job.rate = 0.0 if job.done else job.working_rate()
        is_broken = job.broken and not job.done
        busy, broken = (held if job.rate > 0 else 0), (held if is_broken else 0)
        self.busy += busy - job.busy_gpus
        self.broken_held += broken - job.broken_gpus
        job.busy_gpus, job.broken_gpus = busy, broken
        job.version += 1
        if job.rate > 0:
            self._push(self.now + (job.spec.work - job.progress) / job.rate, COMPLETE, job, job.version)
            if job.first_start is None:
                job.first_start = self.now
                if not job.spec.initial and job.is_gang:
                    self.tally.waits.setdefault(job.spec.tier, []).append(self.now - job.spec.arrival)
        if is_broken:
            if not old_broken:
                job.broken_since = self.now
            self._push(job.broken_since + BROKEN_RESTART_SECONDS, RESTART, job, job.version)
        else:
            job.broken_since = None
        if job.done or not job.pending_pods:
            self.pending.pop(id(job), None)
        else:
            self.pending[id(job)] = job
        if job.is_gang:
            if job.running and not job.done:
                self.running_gangs[id(job)] = job
            else:
                self.running_gangs.pop(id(job), None)

    def _bind(self, job: ReplayJob, placement: dict[str, str]) -> None:
        for pod in job.pods:
            node_name = placement.get(pod.key)
            if node_name is None or pod.node is not None:
                continue
            node = self.by_name[node_name]
            before = node.free_gpus
            for i, want in enumerate(job.pod_requests):
                node.free[i] -= want
            self.capacity.moved(node, before)
            self.capacity.hold(job.spec.priority, job.pod_gpus)
            pod.node, pod.started = node_name, self.now
            job.running += 1
            self.held += job.pod_gpus
            self.snapshots.bound(pod)
            self.bound[pod.key] = pod
        job.backoff = 0.0
        self._update(job)

    def _release(self, pod: ReplayPod) -> None:
        job = pod.job
        node = self.by_name[pod.node]
        before = node.free_gpus
        for i, want in enumerate(job.pod_requests):
            node.free[i] += want
        self.capacity.moved(node, before)
        self.capacity.hold(job.spec.priority, -job.pod_gpus)
        self.snapshots.released(pod)
        self.bound.pop(pod.key, None)
        pod.node, pod.started = None, None
        pod.attempt += 1
        job.running -= 1
        self.held -= job.pod_gpus
        self.released += 1
        self.dirty = True

    def _interrupt(self, job: ReplayJob) -> None:
        """An eviction hit the job: it falls back to its last checkpoint."""
        self._settle(job)
        kept = saved_progress(job.progress, self.checkpoint)
        if job.saved_on_notice is not None:
            kept = max(kept, job.saved_on_notice)
            job.saved_on_notice = None
        lost = (job.progress - kept) * job.gpus
        self.tally.lost_gpu_seconds[job.spec.kind] += lost
        self.lost_log.append((self.now, job.spec.namespace, lost))
        job.progress = kept

    def _allowance(self) -> Allowance | None:
        """What each namespace may still lose this rolling hour (``--lost-work-budget``)."""
        if self.budget is None:
            return None
        since = self.now - LOST_WORK_WINDOW
        self.lost_log = [entry for entry in self.lost_log if entry[0] > since]
        spent: dict[str, float] = {}
        for _, namespace, lost in self.lost_log:
            spent[namespace] = spent.get(namespace, 0.0) + lost
        return Allowance(
            default=self.budget, namespaces={ns: self.budget - lost for ns, lost in spent.items()}
        )

    def _give_notice(self, job: ReplayJob, result) -> None:
        """The victims hear of their eviction: gangs save what they have, taking ``notice_save_seconds``;
        all are evicted together once every one that can has saved, or at the deadline."""
        wait = 0.0
        for key in {key for v in result.victims for key in v.pods}:
            pod = self.bound.get(key)
            if pod is None or pod.node is None:
                continue
            victim = pod.job
            save = notice_save_seconds(victim.gpus) if victim.is_gang else float("inf")
            if save > self.notice:
                wait = self.notice
                continue
            wait = max(wait, save)
            if victim.saved_on_notice is None:
                self._settle(victim)
                victim.saved_on_notice = victim.progress
        job.next_try = float("inf")  # planned: it waits for its own evictions
        self._push(self.now + wait, EVICT, (job, result))

    # ---- scheduling
    def _preemptors(self) -> list[ReplayJob]:
        if self.policy == "none":
            return []
        return [j for j in self.pending.values() if j.is_gang and j.running < j.min_count]

    def _pinned_rack(self, job: ReplayJob) -> str | None:
        if not job.topology or not job.running:
            return None
        return self.by_name[job.bound_pods[0].node].rack

    def _bind_first_fit(self, job: ReplayJob) -> bool:
        if job.blocked_at == self.released or not self.capacity.may_bind(job, self._pinned_rack(job)):
            job.blocked_at = self.released
            return False
        placement = self._first_fit(job)
        if placement is None:
            job.blocked_at = self.released
            return False
        self._bind(job, placement)
        return True

    def _first_fit(self, job: ReplayJob) -> dict[str, str] | None:
        """The binder's answer over the nodes with room for a pod, in name order.

        The first few such nodes are tried alone first: when they take every pending pod, first fit over
        all of them gives the same placement (each pod takes the first node with room), only faster.
        """
        pending, bound = job.pending_pods, job.bound_pods
        row = self.capacity.open.get(job.pod_gpus) if job.pod_gpus else range(len(self.nodes))
        head = [self.nodes[i] for i in row[:FIRST_FIT_HEAD]]
        if len(row) > FIRST_FIT_HEAD and not job.topology:
            placement = first_fit(job, pending, bound, head)
            if placement is not None and len(placement) == len(pending):
                return placement
        return first_fit(job, pending, bound, [self.nodes[i] for i in row])

    def _schedule(self) -> None:
        self.dirty = False
        order = sorted(self.pending.values(), key=lambda j: (-j.spec.priority, j.spec.arrival, j.spec.name))
        for job in order:
            if not job.done and job.pending_pods:
                self._bind_first_fit(job)
        due = [j for j in self._preemptors() if self.now >= j.next_try]
        due.sort(key=lambda j: (-j.spec.priority, j.spec.arrival, j.spec.name))
        snapshot = None
        for job in due:
            if job.running >= job.min_count or not job.pending_pods:
                continue
            if not self.capacity.may_preempt(job):
                self._back_off(job)
                continue
            if snapshot is None:
                started = time.perf_counter()
                snapshot = self.snapshots.build(self.running_gangs.values(), due, self.now, self.intervals)
                snapshot = snapshot.with_lost_work(allowance=self._allowance())
                self.tally.snapshot_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            result = engine_plan(snapshot, job.key, self.policy)
            self.tally.plan_ms.append((time.perf_counter() - started) * 1000)
            self.tally.plans += 1
            if result.feasible and result.victims and self.notice > 0:
                self._give_notice(job, result)
                snapshot = None
                continue
            if not result.feasible or not self._execute(job, result):
                self._back_off(job)
                continue
            snapshot = None  # the cluster changed

    def _back_off(self, job: ReplayJob) -> None:
        low, high = BACKOFF_SECONDS
        job.backoff = min(high, job.backoff * 2) if job.backoff else low
        job.next_try = self.now + job.backoff

    def _execute(self, job: ReplayJob, result) -> bool:
        victims = {key for v in result.victims for key in v.pods}
        if not victims and not result.placement:
            return False
        pods = self.bound
        hit: dict[int, ReplayJob] = {}
        for key in sorted(victims):
            pod = pods.get(key)
            if pod is None or pod.node is None:
                continue
            if pod.job.spec.priority >= job.spec.priority:
                self.tally.evicted_not_lower += 1
            if id(pod.job) not in hit:
                self._interrupt(pod.job)
                hit[id(pod.job)] = pod.job
            self._release(pod)
            self.tally.evictions += 1
        for victim in hit.values():
            if victim.is_gang:
                if victim.running == 0:
                    self.tally.evicted_gangs_whole += 1
                elif victim.running < victim.min_count and victim.broken_since is None:
                    self.tally.broken[victim.spec.disruption] += 1
            self._update(victim)
        if victims:
            self.tally.preemptions += 1
        placement = self._checked(job, result.placement)
        if placement is None:
            placement = self._first_fit(job)
        if placement is None:
            self.tally.wasted_plans += bool(victims)
            return bool(victims)
        self._bind(job, placement)
        return True

    def _checked(self, job: ReplayJob, placement: dict[str, str]) -> dict[str, str] | None:
        """The plan's placement of the job's pending pods, when it still fits the replay's nodes."""
        free = {}
        chosen = {}
        for pod in job.pending_pods:
            name = placement.get(pod.key)
            if name is None:
                continue
            room = free.setdefault(name, list(self.by_name[name].free))
            if any(have < want for have, want in zip(room, job.pod_requests)):
                return None
            free[name] = [have - want for have, want in zip(room, job.pod_requests)]
            chosen[pod.key] = name
        if job.running + len(chosen) < job.min_count:
            return None
        return chosen

    def _finish(self) -> None:
        for job in self.jobs:
            if (
                job.is_gang
                and not job.spec.initial
                and job.first_start is None
                and job.spec.arrival < self.horizon
            ):
                tier = job.spec.tier
                self.tally.waits.setdefault(tier, []).append(self.horizon - job.spec.arrival)
                self.tally.never_started[tier] = self.tally.never_started.get(tier, 0) + 1
