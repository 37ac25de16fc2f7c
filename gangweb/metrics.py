"""Prometheus metrics for the HTTP side, and the ``/metrics`` view.

Domain metrics live beside their code (admission, scheduler) and register in the same default
registry, so one scrape shows everything the process knows.
"""

from __future__ import annotations

import time

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

REQUEST_LATENCY = Histogram(
    "gangweb_http_request_duration_seconds",
    "Time to answer an HTTP request, by route.",
    ["method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
REQUESTS_IN_ERROR = Counter(
    "gangweb_http_exceptions_total", "Requests that raised an unhandled exception.", ["route"]
)


def _route(request: HttpRequest) -> str:
    # The URL pattern, not the path: keeps label cardinality bounded.
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return match.route or match.view_name or "unknown"


class RequestMetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        except Exception:
            REQUESTS_IN_ERROR.labels(_route(request)).inc()
            raise
        REQUEST_LATENCY.labels(request.method, _route(request), str(response.status_code)).observe(
            time.perf_counter() - started
        )
        return response


def metrics_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse(generate_latest(), content_type=CONTENT_TYPE_LATEST)
