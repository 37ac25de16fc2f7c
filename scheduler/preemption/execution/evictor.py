"""Calling the Eviction API for one ledger row, crash-safely.

The row is moved to ``evicting`` (attempt counter + 1) and committed BEFORE the request goes out. A
successor that finds a row in ``evicting`` therefore knows a request may have reached the API server,
and looks at the pod first: gone, replaced (other UID) or terminating means the earlier request
worked, and the row is closed without a second eviction.

Every request names the planned pod by UID (``deleteOptions.preconditions.uid``): a pod recreated under
the same name by its controller answers 409 and is never touched. No request starts unless the node
locks are certain to outlast it (``Calls.ready``), and once the execution is told to stop (a time limit
in the main thread, lost locks) no thread starts another.

Each evicted pod is marked ``DisruptionTarget`` (reason ``PreemptionByScheduler``, the message naming the
gang and the plan, by UID): after an eviction, since the Eviction API replaces any earlier mark with its
own, and before a deletion, which sets none.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import close_old_connections, connection

from scheduler.cluster import Cluster, EvictionResult
from scheduler.preemption import ledger, metrics
from scheduler.preemption.locks import Lease, Stopped
from scheduler.preemption.models import Eviction, EvictionState

logger = logging.getLogger(__name__)

EVICT, DELETE = "evict", "delete"


@dataclass(frozen=True)
class Calls:
    """How one execution talks to the cluster: under which lease, how long one call may take, and
    whether victims are evicted (the Eviction API, budgets enforced) or deleted (like kube-scheduler)."""

    cluster: Cluster
    lease: Lease
    margin: float = 0.0
    remove: str = EVICT

    def ready(self) -> None:
        """Raise ``locks.Stopped``/``LockLost`` unless one more API call may start now."""
        self.lease.check(self.margin)

    def pause(self, seconds: float) -> None:
        """Sleep between attempts, waking (and raising) as soon as the execution must stop."""
        self.lease.stopping.wait(seconds)
        self.ready()

    def remove_pod(self, row: Eviction, *, dry_run: bool = False, how: str | None = None) -> EvictionResult:
        self.ready()
        if (how or self.remove) == DELETE:
            if not row.pod_uid:  # never delete a pod we cannot name by UID
                return EvictionResult(
                    row.namespace,
                    row.name,
                    412,
                    "no UID recorded for the planned pod; gangweb deletes pods only with a UID precondition",
                    dry_run,
                )
            return self.cluster.delete_pod(row.namespace, row.name, uid=row.pod_uid, dry_run=dry_run)
        return self.cluster.evict(row.namespace, row.name, uid=row.pod_uid or None, dry_run=dry_run)


def replaced(result: EvictionResult) -> bool:
    """A 409 from the UID precondition: the planned pod is gone, another one has its name now."""
    return result.code == 409 and "uid" in result.message.lower()


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    first_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int) -> float:
        return min(self.max_delay, self.first_delay * (2 ** (attempt - 1)))


def in_threads(
    rows: Iterable[Eviction], work: Callable[[Eviction], object], lease: Lease | None = None, width: int = 16
) -> list:
    """Run ``work`` for every row on up to ``width`` threads; results in row order.

    When the calling thread is interrupted while it waits (Celery's soft time limit raises
    ``SoftTimeLimitExceeded`` here), the lease is stopped, so no thread starts another call, and the
    threads are waited for before the interruption goes on: the caller's locks are never released while
    one of its threads can still be calling the API.

    Each thread keeps one database connection for all its rows and closes it when it runs out of work
    (Django connections are per thread; a pool thread that never closes would leak one).
    """
    rows = list(rows)
    if not rows:
        return []
    if connection.vendor == "sqlite":
        # SQLite (the demo) fails concurrent write transactions with "database is locked" instead of
        # waiting; one at a time costs nothing against the in-memory simulated cluster.
        return [work(row) for row in rows]  # in the caller's thread, on the caller's connection
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(rows)):
        todo.put(index)
    results: list = [None] * len(rows)
    errors: list[BaseException] = []

    def drain() -> None:
        close_old_connections()
        try:
            while True:
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[index] = work(rows[index])
                except BaseException as exc:  # re-raised in the caller, after every thread is done
                    errors.append(exc)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=drain, name=f"gangweb-evict-{i}") for i in range(min(width, len(rows)))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException as interruption:
        if lease is not None:
            lease.stop(f"execution interrupted: {type(interruption).__name__}")
        logger.warning(
            "execution interrupted; waiting for the API calls in flight before letting go",
            extra={"error": repr(interruption), "threads": sum(t.is_alive() for t in threads)},
        )
        _join_through_interruptions(threads)
        raise
    if errors:
        # A stop (lost locks, an interruption) explains the others; report it first.
        raise next((e for e in errors if isinstance(e, Stopped)), errors[0])
    return results


def _join_through_interruptions(threads: list[threading.Thread]) -> None:
    """Wait for every thread even if more interruptions arrive (only SIGKILL ends this process sooner)."""
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join()
            except BaseException as again:
                logger.warning(
                    "interrupted again while waiting for API calls in flight", extra={"error": repr(again)}
                )


def dry_runs(calls: Calls, rows: list[Eviction]) -> list[EvictionResult]:
    """Dry-run every row's removal (in threads, which touch no database), then record the answers in one
    transaction (``ledger.record_dry_runs``). Results in row order."""
    results = in_threads(rows, lambda row: calls.remove_pod(row, dry_run=True), calls.lease)
    for result in results:
        metrics.EVICTIONS.labels(kind="dry_run", code=str(result.code)).inc()
    ledger.record_dry_runs([(r.pk, a.code, a.message, a.ok) for r, a in zip(rows, results, strict=True)])
    return results


def already_evicted(cluster: Cluster, row: Eviction) -> str | None:
    """Why the pod needs no (further) eviction request, or None when it is still there, unchanged."""
    pod = cluster.get_pod(row.namespace, row.name)
    if pod is None:
        return "pod gone"
    meta = pod.get("metadata") or {}
    if row.pod_uid and meta.get("uid") and meta.get("uid") != row.pod_uid:
        return "pod replaced by a new one with the same name"
    if meta.get("deletionTimestamp"):
        return "pod terminating"
    return None


def evict(
    calls: Calls, row: Eviction, preemptor: str, plan_id: int, retry: RetryPolicy, *, claimed: bool = False
) -> bool:
    """Evict the row's pod, retrying retryable answers; True when the pod is (now) evicted. ``claimed``: the
    row was moved to ``evicting`` by this execution a moment ago (``ledger.claim_all_for_eviction``) and no
    request has gone out for it, so the first attempt starts with the call.

    A budget refusal (429 from a PodDisruptionBudget) after the plan's budget check means someone else
    spent the budget since: the plan has started and a gang missing members holds GPUs for nothing, so the
    pod is deleted (UID precondition) to finish its unit, and the ledger says so."""
    current = row if claimed else Eviction.objects.get(pk=row.pk)
    if current.state in (EvictionState.EVICTED, EvictionState.FAILED):
        return current.state == EvictionState.EVICTED
    how = None  # DELETE once a budget refusal says the unit must be finished by deletion
    switched = False  # the pass right after that switch goes at once, without the backoff pause
    while True:
        if claimed:
            claimed = False
        else:
            now_claimed = _claim(calls, current, retry, switched)
            if not isinstance(now_claimed, Eviction):
                return now_claimed
            current, switched = now_claimed, False
        message = f"gangweb: preempting to accommodate podgroup {preemptor} (plan {plan_id})"
        removing = how or calls.remove
        if removing == DELETE:  # a deletion sets no condition: the mark first, as kube-scheduler does
            calls.ready()
            _mark(calls, current, message)
        try:
            result = calls.remove_pod(current, how=how)
        except Stopped:
            raise
        except Exception as exc:  # transport trouble: unknown outcome, re-checked on the next pass
            result = EvictionResult(current.namespace, current.name, 503, f"request failed: {exc}")
        metrics.EVICTIONS.labels(
            kind="delete" if (how or calls.remove) == DELETE else "evict", code=str(result.code)
        ).inc()
        if result.ok:
            ledger.record_eviction(
                current.pk, evicted=True, code=result.code, message=result.message, how=_how_removed(removing)
            )
            if removing == EVICT:
                # The Eviction API writes its own DisruptionTarget (reason EvictionByEvictionAPI) as it
                # evicts, over any mark made before: gangweb's, after it, says preemption and names the gang.
                _mark(calls, current, message)
            return True
        if replaced(result):
            ledger.record_eviction(
                current.pk,
                evicted=True,
                code=result.code,
                message=result.message,
                how="the planned pod is gone (another pod has its name now), never evicted again",
            )
            return True
        if result.budget_refused and calls.remove == EVICT and how is None:
            ledger.note_budget_spent(current.pk, result.message)
            how, switched = DELETE, True
            ledger.record_attempt_error(current.pk, result.code, result.message)
            current.api_code, current.api_message = result.code, result.message
            continue
        if not result.retryable and current.attempts >= 2:
            ledger.record_eviction(
                current.pk, evicted=False, code=result.code, message=result.message, how="refused"
            )
            return False
        ledger.record_attempt_error(current.pk, result.code, result.message)
        current.api_code, current.api_message = result.code, result.message


def _claim(calls: Calls, current: Eviction, retry: RetryPolicy, switched: bool) -> Eviction | bool:
    """Before an attempt: a row left in ``evicting`` is looked at first (a request for it may already have
    reached the API server, ours or a dead worker's), then the row is claimed for one more attempt. The
    claimed row, or whether the pod is evicted when no attempt is to be made."""
    if current.state == EvictionState.EVICTING:
        calls.ready()
        done = already_evicted(calls.cluster, current)
        if done is not None:
            ledger.record_eviction(
                current.pk,
                evicted=True,
                code=current.api_code,
                message="",
                how=f"{done} when re-checked before attempt {current.attempts + 1}",
            )
            return True
        if current.attempts >= retry.attempts:
            ledger.record_eviction(
                current.pk,
                evicted=False,
                code=current.api_code,
                message=current.api_message or "no answer",
                how=f"gave up after {current.attempts} attempts",
            )
            return False
        if current.attempts and not switched:
            calls.pause(retry.delay(current.attempts))
    calls.ready()
    claimed = ledger.claim_for_eviction(current.pk)
    if claimed is None:
        return Eviction.objects.get(pk=current.pk).state == EvictionState.EVICTED
    return claimed


def _mark(calls: Calls, row: Eviction, message: str) -> None:
    """Mark the row's pod (by UID) ``DisruptionTarget``: informative, so a failure is only logged."""
    try:
        calls.ready()
        calls.cluster.mark_disruption_target(row.namespace, row.name, message, uid=row.pod_uid or None)
    except Exception as exc:  # the eviction is what frees the room (a stop shows at the next call)
        logger.warning("could not mark DisruptionTarget", extra={"pod": row.pod, "error": str(exc)})


def _how_removed(remove: str) -> str:
    return "deleted with a UID precondition (disruption budgets not consulted)" if remove == DELETE else ""
