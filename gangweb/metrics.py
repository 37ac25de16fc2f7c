"""Prometheus metrics of the web process, in its own registry (``REGISTRY``), served on a port of their own.

Each process role has one registry holding only its families (the webhook's in ``admission.metrics``, the
workers' in ``scheduler.preemption.metrics``): a process importing another role's module does not export
that role's families as zeros. The web process serves ``REGISTRY`` on ``GANGWEB_WEB_METRICS_PORT``, not on
the dashboard's port, so the figures need no login and reach no one the network policy keeps out.
"""

from __future__ import annotations

import logging
import threading
import time

from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily

logger = logging.getLogger(__name__)

REGISTRY = CollectorRegistry()

REQUEST_LATENCY = Histogram(
    "gangweb_http_request_duration_seconds",
    "Time to answer an HTTP request, by route.",
    ["method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=REGISTRY,
)
REQUESTS_IN_ERROR = Counter(
    "gangweb_http_exceptions_total",
    "Requests that raised an unhandled exception.",
    ["route"],
    registry=REGISTRY,
)


# The GPU map's figures, set each time the live map refreshes (gangweb/dashboard/live.py), for Grafana.
GPUS = Gauge("gangweb_gpus", "GPUs on the map, by state.", ["state"], registry=REGISTRY)
WAITING_GANGS = Gauge(
    "gangweb_waiting_gangs", "Gangs waiting for their minCount pods to be placed.", registry=REGISTRY
)


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


class _ApprovalsCollector:
    """Plans waiting for a person (approve mode), read from the ledger at scrape time, for every tenant
    (the port is the operators', not a reader's). A database that does not answer leaves the two families
    out of that scrape rather than failing it."""

    def collect(self):
        from django.db import connection
        from django.db.models import Count, Min
        from django.utils import timezone

        from scheduler.preemption.models import AWAITING_APPROVAL_STATES, Mode, PreemptionRequest

        try:
            row = PreemptionRequest.objects.filter(
                mode=Mode.APPROVE, state__in=AWAITING_APPROVAL_STATES
            ).aggregate(waiting=Count("id"), oldest=Min("created_at"))
        except Exception as error:
            logger.warning("approvals not scraped", extra={"error": str(error)})
            return []
        finally:
            # A scrape runs on a thread of the metrics server: its connection must not outlive it.
            if threading.current_thread() is not threading.main_thread():
                connection.close()
        waiting = GaugeMetricFamily("gangweb_approvals_waiting", "Preemption plans waiting for an approval.")
        waiting.add_metric([], row["waiting"])
        oldest = GaugeMetricFamily(
            "gangweb_approvals_oldest_wait_seconds",
            "Seconds the oldest plan waiting for an approval has waited (0: none waits).",
        )
        oldest.add_metric([], (timezone.now() - row["oldest"]).total_seconds() if row["oldest"] else 0.0)
        return [waiting, oldest]


class _BrokenGangsCollector:
    """Gangs broken now and the GPUs they hold, from the ledger's open episodes (docs/idle.md), for every
    tenant as the approvals are. A database that does not answer leaves them out of that scrape."""

    def collect(self):
        from django.db import connection
        from django.db.models import Count, Sum

        from scheduler.preemption.models import BrokenGang

        try:
            row = BrokenGang.objects.filter(recovered_at__isnull=True).aggregate(
                gangs=Count("id"), gpus=Sum("held_gpus")
            )
        except Exception as error:
            logger.warning("broken gangs not scraped", extra={"error": str(error)})
            return []
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()
        gangs = GaugeMetricFamily("gangweb_broken_gangs", "Gangs with fewer than minCount members running.")
        gangs.add_metric([], row["gangs"])
        gpus = GaugeMetricFamily("gangweb_broken_gang_gpus", "GPUs held by broken gangs (when they broke).")
        gpus.add_metric([], row["gpus"] or 0)
        return [gangs, gpus]


for _collector in (
    _ApprovalsCollector(),
    _BrokenGangsCollector(),
    PROCESS_COLLECTOR,
    PLATFORM_COLLECTOR,
    GC_COLLECTOR,
):
    REGISTRY.register(_collector)


def serve_web_metrics(port: int) -> None:
    """Serve the web process's ``REGISTRY`` on ``port`` (``/metrics``), beside the dashboard's port."""
    start_http_server(port, registry=REGISTRY)
