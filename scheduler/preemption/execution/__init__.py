"""Executing a plan: re-check, dry-run every victim, then evict for real, all-or-nothing per unit.

Order of an execution (each step recorded in the ledger as it happens):
1. Lock every node the plan touches (sorted, with expiry; see ``scheduler.preemption.locks``).
2. If no real eviction has started yet: re-check the plan on fresh reads, then dry-run-evict
   every victim pod in parallel (the answers recorded together once all are in). One refusal and nothing
   is evicted: the plan fails with the reason.
3. Evict every victim pod for real, in parallel. A unit whose evictions fail part-way is finished
   (retrying with backoff) rather than left half-evicted; if it cannot be finished the ledger says so.

With a notice (``GANGWEB_PREEMPTION_NOTICE_SECONDS`` > 0 for a victim's namespace; ``notice.py``), step 2 is
followed by the notice, recorded in the ledger before any victim is told, and the execution returns: each
later call (the ``tick_notices`` beat task) looks whether every victim unit has saved a checkpoint since, or
the deadline has come, and only then goes on to step 2 again on fresh reads and step 3, all units together.
Meanwhile a plan the re-check finds moot or stale withdraws its notice. A resumed call never gives a
second notice: the ledger's one is told again, with its deadline.

Calling ``execute`` again for the same request (task retry, a successor after a crash) resumes:
rows already evicted are skipped, rows caught in ``evicting`` are re-checked at the API before any
new request is sent, and once a real eviction has started the plan is finished rather than re-planned.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scheduler import tracing
from scheduler.cluster import (
    EVICTING,
    PREEMPTION_CONDITION,
    VICTIMS_EVICTED,
    BoundedCalls,
    Cluster,
    ClusterError,
    WatchCache,
)
from scheduler.preemption import ledger, locks, metrics
from scheduler.preemption.execution import notice, reaping
from scheduler.preemption.execution.budgets import shortfalls
from scheduler.preemption.execution.evictor import (
    DELETE,
    EVICT,
    Calls,
    RetryPolicy,
    dry_runs,
    evict,
    in_threads,
    replaced,
)
from scheduler.preemption.execution.recheck import read_fresh, recheck, recheck_reads
from scheduler.preemption.models import Eviction, EvictionState, Plan, PlanSource, RequestState
from scheduler.preemption.planning import fresh_objects, reservation_overrides, reserve_room
from scheduler.words import plural

logger = logging.getLogger(__name__)

STARTED_STATES = (EvictionState.EVICTING, EvictionState.EVICTED)
# The outcome of a call that gave a notice, or found it still running: the request stays executing.
NOTICE = "notice"


@dataclass(frozen=True)
class Outcome:
    state: str
    reason: str
    # The plan went stale before anything was evicted: the gang should be planned again.
    replan: bool = False


def latest_plan(request_id: int) -> Plan | None:
    return (
        Plan.objects.select_related("request")
        .filter(request_id=request_id, source=PlanSource.ENGINE)
        .order_by("-created_at", "-id")
        .first()
    )


def touched_nodes(plan: Plan, rows: list[Eviction]) -> set[str]:
    return {r.node for r in rows if r.node} | {n for n in (plan.placement or {}).values() if n}


def execute(
    request_id: int, cluster: Cluster, *, retry: RetryPolicy | None = None, lock_wait: float = 5.0
) -> Outcome:
    """Run (or resume) the execution of a planned request. Raises ``locks.LockBusy`` to be retried, and
    ``locks.Stopped`` when told to stop mid-way (every call in flight has ended by then)."""
    retry = retry or RetryPolicy()
    # A lock must outlast any call begun under it, even one started just before a missed refresh.
    margin = float(cluster.request_timeout) if isinstance(cluster, BoundedCalls) else 0.0
    ttl = locks.lock_ttl_seconds()
    if margin >= ttl * 2 / 3:
        reason = (
            f"GANGWEB_LOCK_TTL_SECONDS ({ttl:g}) must exceed 1.5 x the longest API call ({margin:g} s): "
            "nothing executed"
        )
        logger.error(reason)
        ledger.finish(request_id, RequestState.FAILED, reason)
        return Outcome(RequestState.FAILED, reason)
    request = ledger.begin_execution(request_id)
    if request is None:
        return Outcome("skipped", "request is not planned or executing")
    plan = latest_plan(request_id)
    if plan is None or not plan.feasible:
        ledger.finish(request_id, RequestState.FAILED, "no feasible plan to execute")
        return Outcome(RequestState.FAILED, "no feasible plan to execute")
    rows = list(plan.pod_evictions.all())
    keys = [locks.node_key(n) for n in touched_nodes(plan, rows)] + [locks.request_key(request_id)]
    with locks.hold(keys, wait=lock_wait, owner=f"request-{request_id}") as lease:
        calls = Calls(cluster, lease, margin, DELETE if settings.GANGWEB_PDB_POLICY == "delete" else EVICT)
        plan.request.refresh_from_db()
        if plan.request.state != RequestState.EXECUTING:
            # A duplicate delivery that waited for the locks while the first one finished the job.
            return Outcome("skipped", f"request is {plan.request.state} now")
        rows = list(plan.pod_evictions.all())  # re-read under the locks
        if not any(r.state in STARTED_STATES for r in rows):
            noticed = plan.notice_given_at is not None
            if noticed or notice.seconds_for(rows):
                waiting = _notice(calls, plan, rows)
                if waiting is not None:
                    return waiting
            refusal = _check_and_dry_run(calls, plan, rows)
            if refusal is not None:
                if noticed:
                    _take_back(calls.cluster, plan, rows, f"the plan was not executed: {refusal.reason}")
                return refusal
        with _stage("evictions", plan, pods=len(rows)):
            return _evict_all(calls, plan, retry)


def _stage(name: str, plan: Plan, **attributes):
    """One stage of the request's trace (``scheduler.tracing``; nothing when traces are off)."""
    request = plan.request
    named = {f"gangweb.{key}": value for key, value in {"plan": plan.pk, **attributes}.items()}
    return tracing.stage(name, request.trace_id, request.trace_span, **named)


def _condition(cluster: Cluster, plan: Plan, status: str, reason: str, message: str) -> None:
    request = plan.request
    if plan.policy == reaping.REAP:  # the condition tells a preemptor what was evicted for it
        return
    try:
        cluster.set_podgroup_condition(
            request.namespace, request.name, PREEMPTION_CONDITION, status, reason, message
        )
    except Exception as exc:  # informative only; never fail an execution for it
        logger.warning(
            "could not set PodGroup condition", extra={"podgroup": request.podgroup, "error": str(exc)}
        )


def _check_and_dry_run(calls: Calls, plan: Plan, rows: list[Eviction]) -> Outcome | None:
    request, cluster = plan.request, calls.cluster
    calls.ready()
    with _stage("re-check", plan, pods=len(rows)):
        verdict, objects = _recheck(cluster, plan, rows, calls)
    if not verdict.ok:
        ledger.fail_unstarted_evictions(plan.pk, f"not evicted: {verdict.reason}")
        reason = f"plan is stale, nothing evicted: {verdict.reason}"
        ledger.finish(request.pk, RequestState.SUPERSEDED, reason)
        return Outcome(RequestState.SUPERSEDED, reason, replan=not verdict.moot)
    with _stage("dry runs", plan, pods=len(rows)):
        return _budgets_and_dry_runs(calls, plan, rows, objects)


def _notice(calls: Calls, plan: Plan, rows: list[Eviction]) -> Outcome | None:
    """Give the plan's notice, or look at the one given: an outcome while the victims still have time to
    save (or the plan did not hold), None once every unit has saved or the deadline has come."""
    cluster, units = calls.cluster, notice.units_of(rows)
    if plan.notice_given_at is None:
        refusal = _check_and_dry_run(calls, plan, rows)
        if refusal is not None:
            return refusal
        plan, _ = ledger.give_notice(plan.pk, notice.seconds_for(rows))
        calls.ready()
        notice.tell(cluster, plan, units)
        return Outcome(NOTICE, f"notice given until {notice.rfc3339(plan.notice_deadline)}")
    calls.ready()
    seen = notice.look(cluster, units)
    untold = [unit for unit in units if not seen[unit].told]
    if untold:  # the ledger has the notice but the victims were not all told (a crash in between)
        notice.tell(cluster, plan, untold)
    saved = [unit for unit in units if notice.saved(seen[unit], plan.notice_given_at)]
    deadline = notice.rfc3339(plan.notice_deadline)
    if len(saved) == len(units) or timezone.now() >= plan.notice_deadline:
        why = (
            f"every victim unit saved a checkpoint after the notice: evicting all {plural(len(units), 'unit')}"
            if len(saved) == len(units)
            else f"deadline {deadline} reached with {len(saved)} of {plural(len(units), 'unit')} saved: "
            "evicting all"
        )
        checkpoints = {str(u): seen[u].checkpoint for u in units if seen[u].checkpoint is not None}
        ledger.end_notice(plan, why, checkpoints)
        return None
    verdict, _ = _recheck(cluster, plan, rows, calls, quiet=True)
    if not verdict.ok:
        reason = f"notice withdrawn, nothing evicted: {verdict.reason}"
        _take_back(cluster, plan, rows, verdict.reason, finish=reason)
        return Outcome(RequestState.SUPERSEDED, reason, replan=not verdict.moot)
    return Outcome(
        NOTICE, f"{len(saved)} of {plural(len(units), 'victim unit')} saved; waiting until {deadline}"
    )


def _take_back(cluster: Cluster, plan: Plan, rows: list[Eviction], why: str, finish: str = "") -> None:
    """Withdraw the plan's notice: the victims first (a crash before the ledger tells them again, then
    withdraws again), then the ledger, with the request's end when ``finish`` says why."""
    notice.untell(cluster, plan, notice.units_of(rows), why)
    with transaction.atomic():
        ledger.withdraw_notice(plan.pk, why)
        if finish:
            ledger.fail_unstarted_evictions(plan.pk, "not evicted: the notice was withdrawn")
            ledger.finish(plan.request.pk, RequestState.SUPERSEDED, finish)


def _recheck(cluster: Cluster, plan: Plan, rows: list[Eviction], calls: Calls, *, quiet: bool = False):
    """The plan re-checked on fresh reads: (verdict, the objects it was checked against); ``quiet``: the
    history records only a failed one (a notice re-checks at every look)."""
    request = plan.request
    began = time.perf_counter()
    seconds: dict[str, float] = {}
    if plan.policy == reaping.REAP:  # a broken gang's remnants: still broken, still the same pods?
        verdict, objects = reaping.recheck(cluster, plan, rows, budgets=calls.remove == EVICT)
    elif isinstance(cluster, WatchCache):
        # Only what must be exact, read afresh by name; the engine's check on the cache once it holds the reads.
        reads = read_fresh(cluster, plan, rows, budgets=calls.remove == EVICT)
        seconds["reads"] = time.perf_counter() - began
        if not cluster.wait_for_versions(reads.versions, timeout=30.0):
            raise ClusterError(f"the watch cache did not reach {reads.versions} in 30 s")
        seconds["catch_up"] = time.perf_counter() - began - seconds["reads"]
        objects = reads.objects()
        overrides = reservation_overrides(cluster, request.podgroup)
        verdict = recheck_reads(reads, cluster.live_snapshot(), overrides, plan, rows)
    else:
        objects = fresh_objects(cluster)
        verdict = recheck(reserve_room(objects, request.podgroup), plan, rows)
    seconds["total"] = time.perf_counter() - began
    # How long each part took (the benchmark's timeline reads it: docs/kube.md, "Figures").
    timing = {key: round(value, 4) for key, value in seconds.items()}
    if quiet and verdict.ok:
        return verdict, objects
    ledger.note("execution.recheck", verdict.reason, plan=plan, data={"ok": verdict.ok, "seconds": timing})
    return verdict, objects


def _budgets_and_dry_runs(calls: Calls, plan: Plan, rows: list[Eviction], objects) -> Outcome | None:
    request, cluster = plan.request, calls.cluster
    if calls.remove == EVICT:
        # Dry runs never spend a budget: two victims under a budget of one both pass them. So the plan as a
        # whole is held against every budget, as the cluster has it now.
        short = shortfalls(objects, [r.pod for r in rows])
        if short:
            reason = "disruption budgets do not allow this plan, nothing evicted: " + "; ".join(
                map(str, short)
            )
            ledger.fail_unstarted_evictions(plan.pk, "not evicted: the plan breaks a disruption budget")
            ledger.finish(
                request.pk, RequestState.FAILED, reason, data={"budgets": [b.budget for b in short]}
            )
            _condition(cluster, plan, "False", "BudgetExceeded", reason)
            return Outcome(RequestState.FAILED, reason)

    pending = [r for r in rows if r.state in (EvictionState.PLANNED, EvictionState.DRY_RUN_OK)]
    # A refusal recorded before a restart counts as much as a new one.
    refused = [
        (r.pod, r.dry_run_code, r.dry_run_message) for r in rows if r.state == EvictionState.DRY_RUN_REFUSED
    ]
    results = dry_runs(calls, pending)
    gone = sorted(f"{r.namespace}/{r.name}" for r in results if replaced(r))
    if gone:  # a victim was recreated under its name since the plan: the plan no longer says who to evict
        reason = f"plan is stale, nothing evicted: victim pods replaced since planning: {', '.join(gone)}"
        ledger.fail_unstarted_evictions(plan.pk, "not evicted: another victim was replaced since planning")
        ledger.finish(request.pk, RequestState.SUPERSEDED, reason)
        return Outcome(RequestState.SUPERSEDED, reason, replan=True)
    refused += [(f"{r.namespace}/{r.name}", r.code, r.message) for r in results if not r.ok]
    if refused:
        pod, code, message = min(refused)
        reason = (
            f"dry-run eviction refused for {len(refused)} of {len(rows)} victim pods, nothing evicted; "
            f"{pod}: {code} {message}".strip()
        )
        ledger.fail_unstarted_evictions(plan.pk, "not evicted: another victim's dry run was refused")
        ledger.finish(
            request.pk, RequestState.FAILED, reason, data={"refused": sorted(p for p, _, _ in refused)}
        )
        _condition(cluster, plan, "False", "DryRunRefused", reason)
        return Outcome(RequestState.FAILED, reason)
    return None


def _evict_all(calls: Calls, plan: Plan, retry: RetryPolicy) -> Outcome:
    request, cluster = plan.request, calls.cluster
    every = list(plan.pod_evictions.all())
    rows = [r for r in every if r.state not in (EvictionState.EVICTED, EvictionState.FAILED)]
    if rows:
        resuming = any(r.state in STARTED_STATES for r in every)
        message = f"{'resuming: ' if resuming else ''}evicting {len(rows)} pods for plan {plan.pk}"
        ledger.note("execution.evicting", message, plan=plan, data={"pods": [r.pod for r in rows]})
    # Rows not started yet are claimed together, before any call, so each thread starts with its call
    # (not with a database connection and a write of its own); a resumed row is looked at first (evict).
    calls.ready()
    claimed = {row.pk: row for row in ledger.claim_all_for_eviction([r.pk for r in rows])}
    # The condition is informative: set beside the evictions, not before them (a read and a patch, 0.1 s
    # before the first eviction in bench watch).
    marking = None
    if rows:
        marking = threading.Thread(
            target=_condition, args=(cluster, plan, "True", EVICTING, message), daemon=True
        )
        marking.start()

    def one(row: Eviction) -> bool:
        mine = claimed.get(row.pk)
        return evict(calls, mine or row, request.podgroup, plan.pk, retry, claimed=mine is not None)

    try:
        in_threads(rows, one, calls.lease)
    finally:
        if marking is not None:
            marking.join()

    by_unit: dict[str, list[Eviction]] = defaultdict(list)
    for row in plan.pod_evictions.all():
        by_unit[row.victim_unit].append(row)
    broken = {
        unit: members
        for unit, members in by_unit.items()
        if any(m.state != EvictionState.EVICTED for m in members)
    }
    if plan.notice_given_at is not None:  # before the request ends: a resumed call clears it again
        calls.ready()
        notice.clear(cluster, plan, [notice.Unit.of(unit) for unit in sorted(by_unit) if unit not in broken])
    if not broken:
        evicted = sum(len(m) for m in by_unit.values())
        reason = (
            f"evicted {plural(evicted, 'pod')} in {plural(len(by_unit), 'unit')}; the gang fits now"
            if evicted
            else "the gang fits without evicting anyone"
        )
        ledger.finish(request.pk, RequestState.SUCCEEDED, reason)
        metrics.LOST_GPU_SECONDS.inc(plan.lost_gpu_seconds)
        _condition(cluster, plan, "False", VICTIMS_EVICTED, reason)
        return Outcome(RequestState.SUCCEEDED, reason)

    for unit, members in sorted(broken.items()):
        done = [m.pod for m in members if m.state == EvictionState.EVICTED]
        left = [
            f"{m.pod} ({m.api_code} {m.api_message})".strip()
            for m in members
            if m.state != EvictionState.EVICTED
        ]
        if done:
            ledger.note(
                "unit.partial",
                f"UNIT LEFT PARTLY EVICTED: {unit}: {len(done)} evicted, could not evict "
                f"{', '.join(left)} after retries",
                plan=plan,
                data={"unit": unit, "evicted": done, "left": left},
            )
    reason = f"{plural(len(broken), 'victim unit')} could not be fully evicted: {', '.join(sorted(broken))}"
    ledger.finish(request.pk, RequestState.FAILED, reason)
    _condition(cluster, plan, "False", "EvictionFailed", reason)
    return Outcome(RequestState.FAILED, reason)
