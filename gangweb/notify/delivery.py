"""Sending deliveries: each due one is claimed, POSTed once, and its ``Attempt`` recorded.

A claim locks the due rows (skipping rows another worker holds) and moves their ``next_attempt_at`` past
the attempt's longest duration (a lease), so two workers never send one at once, and one that died
mid-send leaves it due again once the lease runs out. The rows of one pass are sent one thread per sink,
each try bounded by ``GANGWEB_NOTIFY_TIMEOUT_SECONDS``: a sink that is slow or down costs the others
nothing, and once one of its tries failed its other rows of the pass wait for the backoff untried. A failed try is
due again after a backoff that doubles from ``GANGWEB_NOTIFY_BACKOFF_SECONDS`` up to
``GANGWEB_NOTIFY_BACKOFF_MAX_SECONDS``; after ``GANGWEB_NOTIFY_GIVE_UP_SECONDS`` it is given up, and says so.
Redirects are not followed (only the configured hosts are ever called): a 3xx is a failed try.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

import urllib3
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from gangweb.notify import sinks
from gangweb.notify.models import Attempt, Delivery, DeliveryState

MAX_PARALLEL = 16
SWEEP_BATCH = 500
CATCH_UP = 100  # other due rows one delivery task takes along (see _claim)
LEASE_MARGIN_SECONDS = 30.0


@dataclass
class Answer:
    ok: bool
    status: int | None
    error: str
    seconds: float


_pool: tuple[int, urllib3.PoolManager] | None = None
_pool_lock = threading.Lock()


def _http() -> urllib3.PoolManager:
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), urllib3.PoolManager(num_pools=64, maxsize=MAX_PARALLEL, retries=False))
        return _pool[1]


def post(url: str, body: object, content_type: str, timeout: float) -> Answer:
    """POST ``body`` as JSON; 2xx is delivered, anything else (a redirect included) a failed try."""
    started = time.monotonic()
    try:
        response = _http().request(
            "POST",
            url,
            body=json.dumps(body).encode(),
            headers={"Content-Type": content_type, "User-Agent": "gangweb-notify"},
            timeout=urllib3.Timeout(connect=min(timeout, 3.0), read=timeout),
            redirect=False,
            retries=False,
            preload_content=True,
        )
    except Exception as exc:  # refused, reset, timed out: all one failed try
        return Answer(False, None, f"{type(exc).__name__}: {exc}"[:500], time.monotonic() - started)
    seconds = time.monotonic() - started
    if 200 <= response.status < 300:
        return Answer(True, response.status, "", seconds)
    if 300 <= response.status < 400:
        where = response.headers.get("Location", "?")
        return Answer(False, response.status, f"redirect to {where} not followed", seconds)
    text = response.data[:200].decode(errors="replace")
    return Answer(False, response.status, f"HTTP {response.status}: {text}".strip(), seconds)


def backoff(attempts: int) -> float:
    first = float(settings.GANGWEB_NOTIFY_BACKOFF_SECONDS)
    return min(first * 2 ** max(0, attempts - 1), float(settings.GANGWEB_NOTIFY_BACKOFF_MAX_SECONDS))


def _claim(ids: list[int], now: datetime, catch_up: int) -> list[Delivery]:
    """Lock and lease the due rows among ``ids``, and up to ``catch_up`` other due rows (oldest first):
    under a backlog one task sends many, and the tasks of the rows it took find nothing left to do.
    Rows another worker holds are skipped (``skip_locked``), never waited for."""
    lease = now + timedelta(seconds=float(settings.GANGWEB_NOTIFY_TIMEOUT_SECONDS) + LEASE_MARGIN_SECONDS)
    due_rows = Delivery.objects.select_for_update(skip_locked=True, of=("self",)).select_related("sink")
    due_rows = due_rows.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now)
    with transaction.atomic():
        claimed = list(due_rows.filter(pk__in=ids))
        if catch_up:
            claimed += list(due_rows.exclude(pk__in=ids).order_by("next_attempt_at", "pk")[:catch_up])
        Delivery.objects.filter(pk__in=[d.pk for d in claimed]).update(next_attempt_at=lease)
    return claimed


def _send(delivery: Delivery) -> Answer:
    sink = delivery.sink
    try:
        sinks.check_url(sink.url)  # the allowed hosts may have changed since the sink was added
    except sinks.SinkError as exc:
        return Answer(False, None, str(exc), 0.0)
    body, content_type = sinks.body(
        delivery.kind, sink.kind, str(delivery.event_id), delivery.created_at, delivery.payload
    )
    return post(
        sinks.target(sink.kind, sink.url), body, content_type, float(settings.GANGWEB_NOTIFY_TIMEOUT_SECONDS)
    )


def _send_to_one_sink(rows: list[Delivery]) -> list[Answer | None]:
    """One sink's rows in order, on one connection; after a failed try the rest wait (None: not tried)."""
    answers: list[Answer | None] = []
    for row in rows:
        if answers and not answers[-1].ok:
            answers.append(None)
            continue
        answers.append(_send(row))
    return answers


def send_due(ids: list[int], catch_up: int = CATCH_UP) -> list[tuple[int, float]]:
    """Send each of ``ids`` that is due (and up to ``catch_up`` other due rows), once; (id, seconds until
    its next try) of each that failed or was not tried because its sink had just failed."""
    claimed = _claim(ids, timezone.now(), catch_up)
    if not claimed:
        return []
    by_sink: dict[int, list[Delivery]] = {}
    for row in claimed:
        by_sink.setdefault(row.sink_id, []).append(row)
    groups = list(by_sink.values())
    if len(groups) == 1:
        answered = [_send_to_one_sink(groups[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(groups))) as pool:
            answered = list(pool.map(_send_to_one_sink, groups))
    return _record(
        [
            (row, answer)
            for rows, answers in zip(groups, answered, strict=True)
            for row, answer in zip(rows, answers, strict=True)
        ]
    )


def _record(results: list[tuple[Delivery, Answer | None]]) -> list[tuple[int, float]]:
    at = timezone.now()
    give_up_after = timedelta(seconds=float(settings.GANGWEB_NOTIFY_GIVE_UP_SECONDS))
    retry: list[tuple[int, float]] = []
    delivered: list[int] = []
    attempts = []
    with transaction.atomic():
        for delivery, answer in results:
            if answer is not None:
                attempts.append(
                    Attempt(
                        delivery=delivery,
                        at=at,
                        seconds=answer.seconds,
                        status=answer.status,
                        error=answer.error,
                        ok=answer.ok,
                    )
                )
                delivery.attempts += 1
            if answer is not None and answer.ok:
                delivered.append(delivery.pk)
                continue
            error = (
                answer.error
                if answer is not None
                else delivery.last_error or "waiting: the sink's last try failed"
            )
            if at - delivery.created_at >= give_up_after:
                Delivery.objects.filter(pk=delivery.pk).update(
                    state=DeliveryState.GAVE_UP, attempts=delivery.attempts, last_error=error
                )
                continue
            pause = backoff(max(1, delivery.attempts))
            Delivery.objects.filter(pk=delivery.pk).update(
                attempts=delivery.attempts, next_attempt_at=at + timedelta(seconds=pause), last_error=error
            )
            retry.append((delivery.pk, pause))
        Attempt.objects.bulk_create(attempts)
        if delivered:
            Delivery.objects.filter(pk__in=delivered).update(
                state=DeliveryState.DELIVERED, delivered_at=at, last_error="", attempts=F("attempts") + 1
            )
    return retry


def due(limit: int = SWEEP_BATCH) -> list[int]:
    """Pending deliveries whose time has come (the sweep's work: retries, and tasks that were lost)."""
    return list(
        Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=timezone.now())
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
