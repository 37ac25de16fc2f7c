"""Sending deliveries: each due one is claimed, POSTed once, and its ``Attempt`` recorded.

A claim moves the row's ``next_attempt_at`` past the attempt's longest duration (a lease) in one UPDATE,
so two workers never send it at once, and one that died mid-send leaves it due again once the lease runs
out. The deliveries of one pass are sent in parallel threads, each bounded by
``GANGWEB_NOTIFY_TIMEOUT_SECONDS``: a sink that is slow or down costs the others nothing. A failed try is
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
from django.db.models import F
from django.utils import timezone

from gangweb.notify import sinks
from gangweb.notify.models import Attempt, Delivery, DeliveryState

MAX_PARALLEL = 16
SWEEP_BATCH = 500
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


def _claim(ids: list[int], now: datetime) -> list[Delivery]:
    lease = now + timedelta(seconds=float(settings.GANGWEB_NOTIFY_TIMEOUT_SECONDS) + LEASE_MARGIN_SECONDS)
    claimed = []
    for delivery_id in ids:
        # One UPDATE per row: only the worker whose UPDATE matched sends it.
        if Delivery.objects.filter(
            pk=delivery_id, state=DeliveryState.PENDING, next_attempt_at__lte=now
        ).update(next_attempt_at=lease, attempts=F("attempts") + 1):
            claimed.append(Delivery.objects.select_related("sink").get(pk=delivery_id))
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


def send_due(ids: list[int]) -> list[tuple[int, float]]:
    """Send each of ``ids`` that is due, once; (id, seconds until its next try) of those that failed."""
    now = timezone.now()
    claimed = _claim(ids, now)
    if not claimed:
        return []
    if len(claimed) == 1:
        answers = [_send(claimed[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(claimed))) as pool:
            answers = list(pool.map(_send, claimed))
    retry = []
    give_up_after = timedelta(seconds=float(settings.GANGWEB_NOTIFY_GIVE_UP_SECONDS))
    for delivery, answer in zip(claimed, answers, strict=True):
        at = timezone.now()
        Attempt.objects.create(
            delivery=delivery,
            at=at,
            seconds=answer.seconds,
            status=answer.status,
            error=answer.error,
            ok=answer.ok,
        )
        if answer.ok:
            Delivery.objects.filter(pk=delivery.pk).update(
                state=DeliveryState.DELIVERED, delivered_at=at, last_error=""
            )
        elif at - delivery.created_at >= give_up_after:
            Delivery.objects.filter(pk=delivery.pk).update(
                state=DeliveryState.GAVE_UP, last_error=answer.error
            )
        else:
            pause = backoff(delivery.attempts)
            Delivery.objects.filter(pk=delivery.pk).update(
                next_attempt_at=at + timedelta(seconds=pause), last_error=answer.error
            )
            retry.append((delivery.pk, pause))
    return retry


def due(limit: int = SWEEP_BATCH) -> list[int]:
    """Pending deliveries whose time has come (the sweep's work: retries, and tasks that were lost)."""
    return list(
        Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=timezone.now())
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
