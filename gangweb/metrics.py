"""Prometheus metrics for the HTTP side, and the ``/metrics`` view.

Domain metrics live beside their code (admission, scheduler) and register in the same default
registry, so one scrape shows everything the process knows.
"""

from __future__ import annotations

import time

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

REQUEST_LATENCY = Histogram(
    "gangweb_http_request_duration_seconds",
    "Time to answer an HTTP request, by route.",
    ["method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
REQUESTS_IN_ERROR = Counter(
    "gangweb_http_exceptions_total", "Requests that raised an unhandled exception.", ["route"]
)


# The GPU map's figures, set each time the live map refreshes (gangweb/dashboard/live.py), for Grafana.
GPUS = Gauge("gangweb_gpus", "GPUs on the map, by state.", ["state"])
WAITING_GANGS = Gauge("gangweb_waiting_gangs", "Gangs waiting for their minCount pods to be placed.")


def observe_map(totals: dict) -> None:
    GPUS.labels("allocated").set(totals.get("allocatedGpus", 0))
    GPUS.labels("free").set(totals.get("freeGpus", 0))
    GPUS.labels("cordoned").set(totals.get("cordonedGpus", 0))
    WAITING_GANGS.set(totals.get("waitingGangs", 0))


def _route(request: HttpRequest) -> str:
    # The URL's name ("dashboard:overview", "api:request-list"), not its path: one spelling for every
    # route and bounded label cardinality. A route without a name falls back to its pattern.
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    if match.url_name:
        return match.view_name
    return match.route or "unknown"


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
