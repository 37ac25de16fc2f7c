"""Celery tasks of the preemption pipeline: detect, plan, execute, recover. Thin by design.

The PodGroup ensurer's task is admission's (``admission/tasks.py``).

Every task is a reconcile step keyed by a request id: it reads the ledger, does the next step if it is
still due, and records it. Running one twice is harmless, which is what allows ``acks_late`` on
``execute_plan`` and the recovery sweep. Settings and their reasons: docs/pipeline.md.
"""

from __future__ import annotations

import logging
import random
import time
from datetime import timedelta

from celery import shared_task
from celery.exceptions import OperationalError, SoftTimeLimitExceeded
from celery.signals import worker_process_init, worker_ready
from django import db
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scheduler import tracing
from scheduler.cluster import ClusterError, WatchCache, current_objects
from scheduler.engine import SnapshotError
from scheduler.engine.gangkey import GangKey
from scheduler.preemption import (
    detection,
    dispatch,
    healthwatch,
    ledger,
    locks,
    metrics,
    observe,
    planning,
    reaper,
)
from scheduler.preemption.execution import execute
from scheduler.preemption.ledger import approvals
from scheduler.preemption.models import Mode, Plan, PreemptionRequest, RequestState
from scheduler.preemption.runtime import get_cluster, mode_for, observes_any_namespace
from scheduler.served import served_by

logger = logging.getLogger(__name__)

# Re-enqueued by the recovery sweep: a copy still queued when the next sweep runs is dropped, not doubled.
RECOVERY_EXPIRES = 120


def after_commit(task, *args, **options) -> None:
    """Enqueue ``task`` once the current transaction commits (at once outside one).

    A broker that refuses it (Redis down) is logged, never raised: the commit is the truth, and an
    exception here would answer an operator's approval with an error for work that was done. The
    ledger's state says what is due, so ``recover_requests`` enqueues it once the broker answers."""
    transaction.on_commit(lambda: _enqueue(task, args, options))


def _enqueue(task, args: tuple, options: dict) -> None:
    try:
        task.apply_async(args=args, **options)
    except OperationalError as exc:
        logger.warning(
            "%s not enqueued (the broker refused it: %s); the recovery sweep enqueues it once the broker answers",
            task.name,
            exc,
            extra={"task": task.name, "task_args": list(args)},
        )


def replan(request: PreemptionRequest, trigger: str, *, mode: str | None = None) -> int | None:
    """Open a new request for the gang of ``request`` (finished) and plan it, in ``mode`` (else the one
    ``request`` had); its id, None if one was open, or if ``request`` was a reap (the reaper's next pass
    judges the gang anew)."""
    if request.policy == reaper.REAP:
        return None
    with transaction.atomic():
        fresh, created = ledger.open_request(
            request.namespace, request.name, mode=mode or request.mode, policy=request.policy, trigger=trigger
        )
        if not created:
            return None
        after_commit(plan_request, fresh.pk)
        return fresh.pk


def settle_mode_changes() -> list[int]:
    """Requests awaiting approval in a namespace whose mode is no longer approve (the settings changed and
    gangweb restarted): each is superseded by gangweb and its gang planned again at once in the
    namespace's mode, so enforce evicts and observe records without waiting for the approval timeout.
    Run at a worker's start and on each detection pass (docs/pipeline.md, "Modes"); the ids settled."""
    settled = []
    waiting = PreemptionRequest.objects.filter(state=RequestState.AWAITING_APPROVAL)
    for pk, namespace in list(waiting.values_list("pk", "namespace")):
        mode = mode_for(namespace)
        if mode == Mode.APPROVE:
            continue
        with transaction.atomic():
            left = approvals.leave_approve_mode(pk, mode)
            if left is None:
                continue  # decided meanwhile
            replan(left, f"namespace {namespace} left approve mode for {mode} mode", mode=mode)
        settled.append(pk)
    if settled:
        logger.info("settled requests of namespaces that left approve mode", extra={"settled": settled})
    return settled


_said_unserved = False


def cannot_plan(cluster: object) -> str:
    """Why no gang can be detected on ``cluster`` (its API server serves no PodGroups), said once per
    process in the log; "" when PodGroups are served."""
    global _said_unserved
    served = served_by(cluster)
    if served.podgroups:
        _said_unserved = False
        return ""
    why = served.limits()[0]
    if not _said_unserved:
        logger.error("no gang detected or planned: %s", why, extra={"served": served.as_dict()})
        _said_unserved = True
    return why


# The watch trigger's pass is retried this often, after 1, 2, 4 … 30 s (a few minutes in all).
DETECT_RETRIES = 10


@shared_task(
    name="scheduler.detect_unschedulable_gangs", bind=True, ignore_result=True, max_retries=DETECT_RETRIES
)
def detect_unschedulable_gangs(self, podgroup: GangKey | None = None) -> dict:
    """Open one request per gang that stays unschedulable (only gang ``podgroup``'s: the watch trigger's
    pass; the argument keeps the name its queued messages carry); record what kube-scheduler preempted;
    settle requests whose namespace left approve mode.

    The trigger enqueues a gang's pass once per transition, so a pass that fails (the database or the API
    server away for a moment) is retried with backoff; the beat's own pass is retried by the next beat."""
    try:
        return _detect(podgroup)
    except Exception as exc:
        if podgroup is None or isinstance(exc, SnapshotError):
            raise
        if self.request.retries >= self.max_retries:
            logger.error("detection of %s kept failing; the beat's pass is left to find it", podgroup)
            raise
        countdown = min(30, 2**self.request.retries)
        logger.warning(
            "detection of %s failed, retrying in %s s", podgroup, countdown, extra={"error": repr(exc)}
        )
        raise self.retry(exc=exc, countdown=countdown) from exc


def _detect(gang_key: GangKey | None) -> dict:
    if gang_key is None:
        settle_mode_changes()
    try:
        cluster = get_cluster()
        cannot = cannot_plan(cluster)
        if cannot:
            return {"opened": [], "observed": [], "error": cannot}
        objects = current_objects(cluster)
        if gang_key is None:
            judged = objects
        elif isinstance(cluster, WatchCache):
            judged = detection.cached_gang_objects(cluster, gang_key)
        else:
            judged = detection.gang_objects(objects, gang_key)
        stuck = detection.unschedulable_gangs(
            judged, now=time.time(), grace_seconds=settings.GANGWEB_PENDING_GRACE_SECONDS
        )
    except (ClusterError, SnapshotError) as exc:
        if gang_key is not None and isinstance(exc, ClusterError):
            raise  # the trigger's pass is retried (detect_unschedulable_gangs)
        # The next beat tries again; one line in the log, not a traceback every ten seconds.
        logger.error("cannot read the cluster snapshot; no gang detected", extra={"error": str(exc)})
        return {"opened": [], "observed": [], "error": str(exc)}
    opened = []
    for gang in stuck:
        with transaction.atomic():
            request = ledger.open_new_request(
                gang.namespace,
                gang.name,
                pause_seconds=settings.GANGWEB_REQUEST_COOLDOWN_SECONDS,
                mode=mode_for(gang.namespace),
                trigger=gang.trigger,
            )
            if request is not None:
                opened.append(request.pk)
                after_commit(plan_request, request.pk)
    observed = (
        observe.record_observations(objects + observe.preemption_events(get_cluster()))
        if observes_any_namespace()
        else []
    )
    health = healthwatch.sweep(objects) if gang_key is None else {}
    reaped = reaper.sweep(objects) if gang_key is None else []
    return {"opened": opened, "observed": observed, **health, "reaped": reaped}


@shared_task(name="scheduler.plan_request", bind=True, ignore_result=True, max_retries=3)
def plan_request(self, request_id: int) -> None:
    try:
        request = ledger.begin_planning(request_id)
    except (db.OperationalError, db.InterfaceError) as exc:
        # Nothing moved yet: the request is still pending. Retried here, not left to the beat's
        # recover_requests, which a worker without a beat (the benchmarks', a one-off) never runs.
        if self.request.retries >= self.max_retries:
            logger.error(
                "cannot start planning; the beat's recovery is left to plan it", extra={"request": request_id}
            )
            raise
        countdown = 2**self.request.retries
        logger.warning(
            "cannot start planning, retrying in %s s",
            countdown,
            extra={"request": request_id, "error": repr(exc)},
        )
        raise self.retry(exc=exc, countdown=countdown) from exc
    if request is None:
        return
    try:
        with tracing.stage(
            "plan", request.trace_id, request.trace_span, **{"gangweb.policy": request.policy}
        ):
            view = planning.current_view(get_cluster(), request.podgroup)
            result = planning.compute(view, request.podgroup, request.policy)
    except SnapshotError as exc:
        # Not transient: the group is gone or the snapshot is malformed; say so instead of retrying.
        ledger.finish(request_id, RequestState.FAILED, f"cannot plan: {exc}")
        return
    except Exception as exc:
        logger.exception("planning failed", extra={"request": request_id})
        if self.request.retries < self.max_retries:
            ledger.requeue_planning(request_id, f"planning failed, retrying: {exc}")
            raise self.retry(exc=exc, countdown=2**self.request.retries) from exc
        ledger.finish(request_id, RequestState.FAILED, f"planning failed: {exc}")
        return
    after_plan(request_id, result, planned_by="single")


def after_plan(request_id: int, result: planning.PlanResult, *, planned_by: str) -> None:
    """Record the plan and take the step its mode decides (``dispatch``); an execution is enqueued here."""
    with transaction.atomic():
        if dispatch.after_plan(request_id, result, planned_by=planned_by) == dispatch.Next.EXECUTE:
            after_commit(execute_plan, request_id)


# Idempotent (see scheduler.preemption.execution): a redelivered message resumes instead of repeating.
@shared_task(
    name="scheduler.execute_plan",
    bind=True,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=20,
)
def execute_plan(self, request_id: int) -> str:
    try:
        outcome = execute(request_id, get_cluster())
    except locks.LockBusy as busy:
        # Another execution holds a node: wait for it with capped exponential backoff and jitter.
        countdown = min(30, 2 ** min(self.request.retries, 5)) + random.uniform(0, 1)
        if self.request.retries >= self.max_retries:
            ledger.finish(request_id, RequestState.FAILED, f"gave up waiting for node locks: {busy}")
            return RequestState.FAILED
        if self.request.retries == 0:
            ledger.note(
                "execution.waiting", f"waiting: {busy}", request=PreemptionRequest.objects.get(pk=request_id)
            )
        raise self.retry(exc=busy, countdown=countdown) from busy
    except (SoftTimeLimitExceeded, locks.Stopped) as stopped:
        # Stopped between API calls, every call in flight ended: progress is in the ledger, so resume at once
        # (a large plan on a slow API server may need several task lifetimes; each makes progress).
        logger.warning(
            "execution stopped mid-way; resuming", extra={"request": request_id, "error": repr(stopped)}
        )
        raise self.retry(exc=stopped, countdown=1) from stopped
    except Exception as exc:
        # API server or database trouble mid-way: the ledger holds where we were; resume later.
        logger.exception("execution failed; will resume", extra={"request": request_id})
        if self.request.retries >= 5:
            ledger.finish(request_id, RequestState.FAILED, f"execution kept failing, gave up: {exc}")
            return RequestState.FAILED
        raise self.retry(exc=exc, countdown=min(60, 2 ** (self.request.retries + 1))) from exc
    if outcome.replan:
        replan(PreemptionRequest.objects.get(pk=request_id), f"re-plan: {outcome.reason}")
    return outcome.state


@shared_task(name="scheduler.tick_notices", ignore_result=True)
def tick_notices() -> list[int]:
    """Look at every running notice (GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS): each request whose victims
    were told and whose execution is not running now goes on (``execute`` evicts once every unit has saved
    or the deadline has come, withdraws when the gang no longer needs the room, else waits); the ids."""
    running = (
        Plan.objects.filter(
            request__state=RequestState.EXECUTING,
            notice_given_at__isnull=False,
            notice_withdrawn_at__isnull=True,
        )
        .values_list("request_id", flat=True)
        .distinct()
    )
    looked = []
    for request_id in sorted(running):
        if locks.is_locked(locks.request_key(request_id)):
            continue  # its execution runs now
        looked.append(request_id)
        _enqueue(
            execute_plan, (request_id,), {"expires": float(settings.GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS)}
        )
    return looked


@shared_task(name="scheduler.expire_approvals", ignore_result=True)
def expire_approvals() -> list[int]:
    """approve mode: plans not approved in time expire (GANGWEB_APPROVAL_TIMEOUT_SECONDS)."""
    from scheduler.preemption.actions import expire_due

    return expire_due()


@shared_task(name="scheduler.recover_requests", ignore_result=True)
def recover_requests() -> dict:
    """Pick up requests a dead worker left behind, and those waiting for an approval their namespace no
    longer asks for; reschedules itself while some are still locked."""
    settled = settle_mode_changes()
    now = timezone.now()
    stale_planning = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 30)
    quiet = now - timedelta(seconds=10)
    resumed, waiting, replanned = [], [], []
    for request in PreemptionRequest.objects.filter(state=RequestState.EXECUTING):
        if locks.is_locked(locks.request_key(request.pk)):
            waiting.append(request.pk)  # alive, or its locks have not expired yet
        else:
            resumed.append(request.pk)
            execute_plan.apply_async(args=[request.pk], expires=RECOVERY_EXPIRES)
    # approve mode's planned requests are approved ones (a plan waits in awaiting_approval until then).
    for request in PreemptionRequest.objects.filter(
        state=RequestState.PLANNED, mode__in=(Mode.ENFORCE, Mode.APPROVE), updated_at__lt=quiet
    ):
        resumed.append(request.pk)
        execute_plan.apply_async(args=[request.pk], expires=RECOVERY_EXPIRES)
    for request in PreemptionRequest.objects.filter(
        state=RequestState.PLANNING, updated_at__lt=stale_planning
    ):
        ledger.requeue_planning(request.pk, "planning worker did not finish; planning again")
        replanned.append(request.pk)
        plan_request.apply_async(args=[request.pk], expires=RECOVERY_EXPIRES)
    for request in PreemptionRequest.objects.filter(state=RequestState.PENDING, updated_at__lt=quiet):
        replanned.append(request.pk)
        plan_request.apply_async(args=[request.pk], expires=RECOVERY_EXPIRES)
    if waiting:
        recover_requests.apply_async(countdown=locks.lock_ttl_seconds())
    if resumed or replanned:
        logger.info("recovered requests", extra={"resumed": resumed, "replanned": replanned})
    return {"resumed": resumed, "waiting": waiting, "replanned": replanned, "settled": settled}


@worker_ready.connect
def _on_worker_ready(sender=None, **kwargs) -> None:
    # A worker that starts may be the successor of one that was killed mid-execution.
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        recover_requests.apply_async(countdown=1)
    if settings.GANGWEB_WORKER_METRICS_PORT:
        metrics.serve_worker_metrics(settings.GANGWEB_WORKER_METRICS_PORT)


@worker_process_init.connect
def _start_watch_cache(sender=None, **kwargs) -> None:
    # Each pool process lists and watches from its start (the trigger on PodGroup events needs it), not
    # from its first task; get_cluster returns at once and reads wait for the sync.
    if settings.GANGWEB_CLUSTER == "kube" and settings.GANGWEB_WATCH:
        get_cluster()
