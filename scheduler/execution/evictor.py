"""Calling the Eviction API for one ledger row, crash-safely.

The row is moved to ``evicting`` (attempt counter + 1) and committed BEFORE the request goes out. A
successor that finds a row in ``evicting`` therefore knows a request may have reached the API server,
and looks at the pod first: gone, replaced (other UID) or terminating means the earlier request
worked, and the row is closed without a second eviction.
"""

from __future__ import annotations

import logging
import time
import queue
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

from django.db import close_old_connections, connection

from scheduler import ledger, metrics
from scheduler.cluster import Cluster, ClusterEvent, EvictionResult
from scheduler.models import Eviction, EvictionState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    first_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int) -> float:
        return min(self.max_delay, self.first_delay * (2 ** (attempt - 1)))


def in_threads(rows: Iterable[Eviction], work: Callable[[Eviction], object], width: int = 16) -> list:
    """Run ``work`` for every row on up to ``width`` threads; results in row order.

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

    threads = [threading.Thread(target=drain, name=f"gangweb-evict-{i}") for i in range(min(width, len(rows)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def dry_run(cluster: Cluster, row: Eviction) -> EvictionResult:
    result = cluster.evict(row.namespace, row.name, dry_run=True)
    metrics.EVICTIONS.labels(kind="dry_run", code=str(result.code)).inc()
    ledger.record_dry_run(row.pk, result.code, result.message, result.ok)
    return result


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


def evict(cluster: Cluster, row: Eviction, preemptor: str, plan_id: int, retry: RetryPolicy) -> bool:
    """Evict the row's pod, retrying retryable answers; True when the pod is (now) evicted."""
    current = Eviction.objects.get(pk=row.pk)
    if current.state in (EvictionState.EVICTED, EvictionState.FAILED):
        return current.state == EvictionState.EVICTED
    preemptor_ns, _, preemptor_name = preemptor.partition("/")
    while True:
        if current.state == EvictionState.EVICTING:
            # A request for this row may already have reached the API server (ours or a dead worker's).
            how = already_evicted(cluster, current)
            if how is not None:
                ledger.record_eviction(current.pk, evicted=True, code=current.api_code, message="",
                                       how=f"{how} when re-checked before attempt {current.attempts + 1}")
                return True
            if current.attempts >= retry.attempts:
                ledger.record_eviction(current.pk, evicted=False, code=current.api_code,
                                       message=current.api_message or "no answer",
                                       how=f"gave up after {current.attempts} attempts")
                return False
            if current.attempts:
                time.sleep(retry.delay(current.attempts))
        claimed = ledger.claim_for_eviction(current.pk)
        if claimed is None:
            return Eviction.objects.get(pk=row.pk).state == EvictionState.EVICTED
        current = claimed
        message = f"gangweb: preempting to accommodate podgroup {preemptor} (plan {plan_id})"
        try:
            cluster.mark_disruption_target(current.namespace, current.name, message)
        except Exception as exc:  # the condition is informative; the eviction is what frees the room
            logger.warning("could not mark DisruptionTarget", extra={"pod": current.pod, "error": str(exc)})
        try:
            result = cluster.evict(current.namespace, current.name)
        except Exception as exc:  # transport trouble: unknown outcome, re-checked on the next pass
            result = EvictionResult(current.namespace, current.name, 503, f"request failed: {exc}")
        metrics.EVICTIONS.labels(kind="evict", code=str(result.code)).inc()
        if result.ok:
            ledger.record_eviction(current.pk, evicted=True, code=result.code, message=result.message)
            _record_preempted_event(cluster, current, preemptor_ns, preemptor_name, plan_id)
            return True
        if not result.retryable and current.attempts >= 2:
            ledger.record_eviction(current.pk, evicted=False, code=result.code, message=result.message,
                                   how="refused")
            return False
        ledger.record_attempt_error(current.pk, result.code, result.message)
        current.api_code, current.api_message = result.code, result.message


def _record_preempted_event(cluster: Cluster, row: Eviction, namespace: str, name: str, plan_id: int) -> None:
    try:
        cluster.record_event(
            ClusterEvent(
                namespace=row.namespace,
                involved_kind="Pod",
                involved_name=row.name,
                reason="Preempted",
                message=f"Preempted by gangweb for podgroup {namespace}/{name} on node {row.node or 'cluster'}"
                f" (plan {plan_id})",
                related_kind="PodGroup",
                related_name=name,
                related_namespace=namespace,
            )
        )
    except Exception as exc:
        logger.warning("could not record Preempted event", extra={"pod": row.pod, "error": str(exc)})
