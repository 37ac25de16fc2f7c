"""The ledger's story as Kubernetes Events, where ``kubectl describe`` shows it.

``events.publish`` hands every ledger event here once its transaction commits (``observe``); those that
tell a gang's owner something become ``events.k8s.io/v1`` Events (reporting controller
``GANGWEB_CONTROLLER``): on the preemptor's PodGroup (planned, awaiting approval, executed, infeasible with
its reason code, failed), on each evicted pod and its victim unit (preempted by whom, with the request
and plan ids), and on both for a notice given or withdrawn. Others (dry runs, approvals made in the web process) are left to the ledger.

Events are written off the pipeline's path by one thread per process (``EventRecorder``), and repeats are
counted as Kubernetes does: an Event identical to one written in the last ``SERIES_WINDOW_SECONDS`` (same
object, reason, action, related object and note) increments that Event's ``series.count`` instead of
making another object, and the counts a burst adds are written once per pass. A burst of evictions from
one victim PodGroup thus makes one Event on it, counted. Events are best effort, as everywhere in
Kubernetes: a refused write is logged (once per outage) and dropped; the ledger stays the record.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler.cluster import Cluster, ClusterEvent, CountsEvents
from scheduler.words import utc

logger = logging.getLogger(__name__)

SERIES_WINDOW_SECONDS = 1800.0
MAX_SERIES = 10_000  # remembered isomorphic Events per process; the oldest are forgotten first
HOLD = 10_000  # Events waiting to be written; beyond it the oldest are dropped (an API server that hangs)

PODGROUP = "PodGroup"


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = (key or "").partition("/")
    return namespace, name


def _ids(payload: dict[str, Any]) -> str:
    plan = payload.get("plan")
    return f"request {payload.get('request')}" + (f", plan {plan}" if plan is not None else "")


def _on_preemptor(payload: dict[str, Any], reason: str, note: str, type_: str = "Normal") -> ClusterEvent:
    namespace, name = _split(payload.get("podGroup", ""))
    action = "Preempting" if reason != "PreemptionInfeasible" else "Planning"
    return ClusterEvent(
        namespace=namespace,
        involved_kind=PODGROUP,
        involved_name=name,
        reason=reason,
        message=note,
        type=type_,
        extra={"action": action},
    )


def events_for(kind: str, payload: dict[str, Any]) -> list[ClusterEvent]:
    """The Kubernetes Events one ledger event makes (none for most)."""
    if kind == "plan.created" and payload.get("source", "engine") == "engine":
        if payload.get("feasible"):
            pods, units = len(payload.get("evictions") or []), len(payload.get("victims") or [])
            note = (
                f"gangweb plans to evict {pods} pod(s) in {units} unit(s) to place this PodGroup "
                f"({_ids(payload)}): {payload.get('reason', '')}"
            )
            return [_on_preemptor(payload, "PreemptionPlanned", note)]
        code = payload.get("outcome") or "infeasible"
        note = f"gangweb found no preemption that places this PodGroup: {code} ({_ids(payload)}): {payload.get('reason', '')}"
        return [_on_preemptor(payload, "PreemptionInfeasible", note, "Warning")]
    if kind == "request.awaiting_approval":
        note = (
            f"gangweb's plan waits for an operator's approval until {payload.get('approvalDeadline', '?')} "
            f"({_ids(payload)})"
        )
        return [_on_preemptor(payload, "PreemptionAwaitingApproval", note)]
    if kind == "gang.placed":
        note = f"gangweb executed its plan: every victim was evicted ({_ids(payload)})"
        return [_on_preemptor(payload, "PreemptionExecuted", note)]
    if kind == "request.failed" and payload.get("state") == "failed":
        note = f"gangweb's preemption failed ({_ids(payload)}): {payload.get('reason', '')}"
        return [_on_preemptor(payload, "PreemptionFailed", note, "Warning")]
    if kind == "eviction" and payload.get("state") == "evicted":
        return _victim_events(payload)
    if kind in ("notice.given", "notice.withdrawn"):
        return _notice_events(kind, payload)
    return []


def _when(moment: Any) -> str:
    """An ISO 8601 moment of a payload as messages say a time (``words.utc``), or as it came when unreadable."""
    try:
        return utc(datetime.fromisoformat(moment))
    except (TypeError, ValueError):
        return str(moment or "?")


def _notice_events(kind: str, payload: dict[str, Any]) -> list[ClusterEvent]:
    """A notice given or withdrawn: on the preemptor, and on each victim unit (the one its owner watches)."""
    preemptor_ns, preemptor = _split(payload.get("podGroup", ""))
    units = payload.get("units") or []
    if kind == "notice.given":
        deadline = _when(payload.get("noticeDeadline"))
        reason = "PreemptionNotice"
        mine = (
            f"gangweb gave {len(units)} victim unit(s) notice to save until {deadline} ({_ids(payload)}); "
            "they are evicted together once each has saved, at the latest then"
        )
        theirs = (
            f"gangweb preempts this object for PodGroup {preemptor_ns}/{preemptor} ({_ids(payload)}) at "
            f"{deadline} at the latest: save a checkpoint and set gangweb.io/last-checkpoint"
        )
    else:
        reason = "PreemptionNoticeWithdrawn"
        mine = f"gangweb withdrew its notice, nothing evicted ({_ids(payload)}): {payload.get('reason', '')}"
        theirs = f"gangweb withdrew its notice for PodGroup {preemptor_ns}/{preemptor} ({_ids(payload)}): nothing is evicted"
    out = [_on_preemptor(payload, reason, mine)]
    related = {"related_kind": PODGROUP, "related_name": preemptor, "related_namespace": preemptor_ns}
    for unit in units:
        unit_kind, _, key = str(unit).partition(" ")
        namespace, name = _split(key)
        if unit_kind and namespace and name:
            out.append(
                ClusterEvent(
                    namespace=namespace,
                    involved_kind=unit_kind,
                    involved_name=name,
                    reason=reason,
                    message=theirs,
                    type="Warning" if kind == "notice.given" else "Normal",
                    extra={"action": "Preempting"},
                    **related,
                )
            )
    return out


def _victim_events(payload: dict[str, Any]) -> list[ClusterEvent]:
    preemptor_ns, preemptor = _split(payload.get("podGroup", ""))
    namespace, pod = _split(payload.get("pod", ""))
    by = f"PodGroup {preemptor_ns}/{preemptor} ({_ids(payload)})"
    related = {"related_kind": PODGROUP, "related_name": preemptor, "related_namespace": preemptor_ns}
    uid = {"involved_uid": payload["podUid"]} if payload.get("podUid") else {}
    out = [
        ClusterEvent(
            namespace=namespace,
            involved_kind="Pod",
            involved_name=pod,
            reason="Preempted",
            message=f"Preempted by gangweb for {by} on node {payload.get('node') or 'cluster'}",
            extra={"action": "Preempting", **uid},
            **related,
        )
    ]
    unit_kind, _, unit = (payload.get("victimUnit") or "").partition(" ")
    unit_ns, unit_name = _split(unit)
    if unit_kind and unit_kind != "Pod" and unit_name:
        out.append(
            ClusterEvent(
                namespace=unit_ns or namespace,
                involved_kind=unit_kind,
                involved_name=unit_name,
                reason="Preempted",
                message=f"Pods of this {unit_kind} preempted by gangweb for {by}; the series counts them",
                extra={"action": "Preempting"},
                **related,
            )
        )
    return out


@dataclass
class _Series:
    name: str | None  # None: the cluster keeps no names (in memory), the count is only ours
    namespace: str
    count: int
    written: int
    since: float


def _key(event: ClusterEvent) -> tuple:
    return (
        event.namespace,
        event.involved_kind,
        event.involved_name,
        event.reason,
        event.type,
        event.message,
        event.extra.get("action"),
        event.related_kind,
        event.related_namespace,
        event.related_name,
    )


class EventRecorder:
    """Writes Events in the background, counting repeats into series (module docstring)."""

    def __init__(self, cluster_of: Callable[[], Cluster | None]) -> None:
        self._cluster_of = cluster_of
        self._cond = threading.Condition()
        self._pending: list[ClusterEvent] = []
        self._busy = False
        self._series: dict[tuple, _Series] = {}
        self._failing = False
        threading.Thread(target=self._run, name="gangweb-kube-events", daemon=True).start()

    def put(self, events: list[ClusterEvent]) -> None:
        with self._cond:
            self._pending.extend(events)
            if (over := len(self._pending) - HOLD) > 0:
                del self._pending[:over]
            self._cond.notify_all()

    def flush(self, timeout: float) -> bool:
        """Wait until everything put was written (or refused); False when ``timeout`` ran out first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout=timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._busy = False
                    self._cond.notify_all()
                    self._cond.wait()
                self._busy = True
                batch, self._pending = self._pending, []
            try:
                self._write(batch)
            except Exception:  # a bug: logged; the thread goes on with the next batch
                logger.exception("%d Kubernetes Events could not be written", len(batch))

    def _write(self, batch: list[ClusterEvent]) -> None:
        cluster = self._cluster_of()
        if cluster is None:
            return
        now = time.monotonic()
        counted: list[_Series] = []
        for event in batch:
            key = _key(event)
            series = self._series.get(key)
            if series is not None and now - series.since < SERIES_WINDOW_SECONDS:
                series.count += 1
                counted.append(series)
                continue
            name = self._call(lambda e=event: cluster.record_event(e), event)
            if name is False:
                continue
            self._series.pop(key, None)
            self._series[key] = _Series(name or None, event.namespace, 1, 1, now)
            if len(self._series) > MAX_SERIES:
                del self._series[next(iter(self._series))]
        if isinstance(cluster, CountsEvents):
            for series in {id(s): s for s in counted}.values():
                if series.name is not None and series.count != series.written:
                    count = series.count
                    ok = self._call(
                        lambda s=series, c=count: cluster.update_event_series(s.namespace, s.name, c), None
                    )
                    if ok is not False:
                        series.written = count

    def _call(self, call: Callable[[], Any], event: ClusterEvent | None) -> Any:
        """``call()``'s answer, or False when the API refused it (one warning per outage)."""
        try:
            answer = call()
        except Exception as exc:
            if not self._failing:
                self._failing = True
                what = f"{event.reason} on {event.namespace}/{event.involved_name}" if event else "a series"
                logger.warning(
                    "Kubernetes Events are not written (%s: %s); dropping them until it works", what, exc
                )
            return False
        if self._failing:
            self._failing = False
            logger.warning("Kubernetes Events are written again")
        return answer


_recorder: tuple[int, EventRecorder] | None = None
_recorder_lock = threading.Lock()


def _recorder_here() -> EventRecorder:
    global _recorder
    with _recorder_lock:
        if _recorder is None or _recorder[0] != os.getpid():  # a forked worker starts its own thread
            from scheduler.preemption import runtime

            _recorder = (os.getpid(), EventRecorder(runtime.built_cluster))
        return _recorder[1]


def observe(kind: str, payload: dict[str, Any]) -> None:
    """Queue the Events that the committed ledger event ``kind`` makes (``events.publish`` calls it)."""
    try:
        made = events_for(kind, payload)
        if made:
            _recorder_here().put(made)
    except Exception:  # never into the pipeline: the ledger row is committed already
        logger.exception("the Kubernetes Events of %r could not be queued", kind)


def flush(timeout: float = 10.0) -> bool:
    """Wait until this process's Events are written (tests, a command's end)."""
    return _recorder_here().flush(timeout)
