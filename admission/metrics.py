"""Prometheus metrics of the webhook, in the process-wide default registry (served at /metrics)."""

from prometheus_client import Counter, Histogram

REQUESTS = Counter(
    "gangweb_admission_requests_total",
    "Admission requests answered, by webhook and decision "
    "(patched, untouched, allowed, warned, denied, bad_request, error).",
    ["webhook", "decision"],
)
LATENCY = Histogram(
    "gangweb_admission_decision_seconds",
    "Time to parse a review and decide, by webhook (excludes HTTP and TLS).",
    ["webhook"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1),
)
EVENTS_RECORDED = Counter(
    "gangweb_admission_events_recorded_total", "Admission decisions published to the dashboard."
)
EVENTS_DROPPED = Counter(
    "gangweb_admission_events_dropped_total",
    "Admission decisions not published (queue full, or the channel layer failed).",
    ["reason"],
)
