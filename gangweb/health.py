"""Liveness and readiness probes.

``/healthz`` says the process answers. ``/readyz`` says the parts it needs answer: the database
always, Redis when ``REDIS_URL`` is configured. A failing part is named in the 503 body so an
operator reading ``kubectl describe`` knows where to look.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from scheduler import redisclient

REDIS_TIMEOUT_SECONDS = 1.0


def check_database() -> str | None:
    try:
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any driver error means "not ready"
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def check_redis() -> str | None:
    client = redisclient.connect(settings.REDIS_URL, timeout=REDIS_TIMEOUT_SECONDS)
    try:
        client.ping()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    finally:
        client.close()
    return None


def _timed(check) -> dict:
    started = time.perf_counter()
    error = check()
    return {
        "ok": error is None,
        "seconds": round(time.perf_counter() - started, 4),
        **({"error": error} if error else {}),
    }


def _database_in_thread() -> str | None:
    # Django connections belong to their thread; close this one so the pool thread leaks nothing.
    try:
        return check_database()
    finally:
        connection.close()


def readiness_checks() -> dict[str, dict]:
    """Run the checks side by side: a hanging backend costs its own timeout, not the sum of all."""
    checks = {"database": _database_in_thread}
    if settings.REDIS_URL:
        checks["redis"] = check_redis
    with ThreadPoolExecutor(max_workers=len(checks)) as pool:
        futures = {name: pool.submit(_timed, check) for name, check in checks.items()}
        return {name: future.result() for name, future in futures.items()}


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    results = readiness_checks()
    failing = sorted(name for name, result in results.items() if not result["ok"])
    if failing:
        return JsonResponse({"status": "unavailable", "failing": failing, "checks": results}, status=503)
    return JsonResponse({"status": "ok", "checks": results})
