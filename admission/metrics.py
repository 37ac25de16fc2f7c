"""Prometheus metrics of the webhook, in the webhook process's own registry (``REGISTRY``, served at /metrics).

Request counts and decision latencies are plain integers on the hot path (``AdmissionStats``) and
become Prometheus samples only when scraped, through one collector: a prometheus-client Counter or
Histogram takes a lock per update, which at thousands of admissions a second costs more than some of
the admission rules. The decision recorder's counters (``RecorderStats``) work the same way.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

WEBHOOKS = ("mutate", "validate")
DECISIONS = ("patched", "untouched", "allowed", "warned", "denied", "bad_request", "error")
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)

DROP_REASONS = ("publish_failed",)


class AdmissionStats:
    """Counters of one webhook handler; every live instance is summed at scrape time."""

    def __init__(self) -> None:
        self.requests = {(webhook, decision): 0 for webhook in WEBHOOKS for decision in DECISIONS}
        self.latency_buckets = {webhook: [0] * (len(BUCKETS) + 1) for webhook in WEBHOOKS}
        self.latency_sum = dict.fromkeys(WEBHOOKS, 0.0)
        _LIVE.add(self)

    def count(self, webhook: str, decision: str) -> None:
        """A request answered without a decision (a bad request): counted, its time not observed."""
        self.requests[webhook, decision] += 1

    def decided(self, webhook: str, decision: str, seconds: float) -> None:
        self.requests[webhook, decision] += 1
        self.latency_buckets[webhook][bisect_left(BUCKETS, seconds)] += 1
        self.latency_sum[webhook] += seconds


class RecorderStats:
    """Counters of one decision recorder; every live instance is summed at scrape time."""

    def __init__(self) -> None:
        self.recorded = 0
        self.dropped = dict.fromkeys(DROP_REASONS, 0)
        _LIVE_RECORDERS.add(self)


_LIVE: weakref.WeakSet[AdmissionStats] = weakref.WeakSet()
_LIVE_RECORDERS: weakref.WeakSet[RecorderStats] = weakref.WeakSet()


class _AdmissionCollector:
    def collect(self) -> Iterator[Metric]:
        stats = list(_LIVE)
        requests = CounterMetricFamily(
            "gangweb_admission_requests",
            "Admission requests answered, by webhook and decision "
            "(patched, untouched, allowed, warned, denied, bad_request, error).",
            labels=["webhook", "decision"],
        )
        for webhook in WEBHOOKS:
            for decision in DECISIONS:
                requests.add_metric([webhook, decision], sum(s.requests[webhook, decision] for s in stats))
        latency = HistogramMetricFamily(
            "gangweb_admission_decision_seconds",
            "Time to parse a review and decide, by webhook (excludes HTTP and TLS).",
            labels=["webhook"],
        )
        for webhook in WEBHOOKS:
            counts = [sum(s.latency_buckets[webhook][i] for s in stats) for i in range(len(BUCKETS) + 1)]
            cumulative, running = [], 0
            for bound, count in zip((*map(str, BUCKETS), "+Inf"), counts, strict=True):
                running += count
                cumulative.append((bound, running))
            latency.add_metric([webhook], cumulative, sum(s.latency_sum[webhook] for s in stats))
        yield requests
        yield latency
        recorders = list(_LIVE_RECORDERS)
        recorded = CounterMetricFamily(
            "gangweb_admission_events_recorded", "Admission decisions published to the dashboard."
        )
        recorded.add_metric([], sum(r.recorded for r in recorders))
        dropped = CounterMetricFamily(
            "gangweb_admission_events_dropped",
            "Admission decisions not published (buffer full, or the channel layer failed).",
            labels=["reason"],
        )
        for reason in DROP_REASONS:
            dropped.add_metric([reason], sum(r.dropped[reason] for r in recorders))
        yield recorded
        yield dropped


# The webhook's families and the process's own, nothing of the other processes' (one registry per role).
REGISTRY = CollectorRegistry()
for _collector in (_AdmissionCollector(), PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)
