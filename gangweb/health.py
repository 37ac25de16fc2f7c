"""Liveness and readiness probes.

``/healthz`` says the process answers. ``/readyz`` says the parts it needs answer: the database
always, Redis when ``REDIS_URL`` is configured. A failing part is named in the 503 body so an
operator reading ``kubectl describe`` knows where to look.
"""

from __future__ import annotations

import time

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

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
    client = redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
    )
    try:
        client.ping()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    finally:
        client.close()
    return None


def readiness_checks() -> dict[str, dict]:
    checks = {"database": check_database}
    if settings.REDIS_URL:
        checks["redis"] = check_redis
    results: dict[str, dict] = {}
    for name, check in checks.items():
        started = time.perf_counter()
        error = check()
        results[name] = {
            "ok": error is None,
            "seconds": round(time.perf_counter() - started, 4),
            **({"error": error} if error else {}),
        }
    return results


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    results = readiness_checks()
    failing = sorted(name for name, result in results.items() if not result["ok"])
    if failing:
        return JsonResponse(
            {"status": "unavailable", "failing": failing, "checks": results}, status=503
        )
    return JsonResponse({"status": "ok", "checks": results})
