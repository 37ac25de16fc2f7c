"""OpenTelemetry traces of a gang's path: its admission reviews and PodGroup in one trace per gang, and one
trace per preemption request (detection, plan, re-check, dry runs, evictions) linked to the gang's.

Configured by the standard ``OTEL_*`` variables and off unless an OTLP endpoint is named
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``; ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none`` keep it off): spans go over OTLP/HTTP (protobuf) through the SDK's batch
processor, which reads the exporter's variables itself (headers, timeout, compression). Off, nothing of
OpenTelemetry is imported and each hook is a check of ``ON`` (the webhook's hot path pays that only).

A request's spans are made in several processes and at different times, so its trace is written down: the
ledger keeps the trace id and the id of its root span (``PreemptionRequest.trace_id``/``trace_span``), and
each later stage is a child of that remote root. A gang's admission spans have no row to keep ids in, so
the gang's trace and the parent of its admission spans are derived from its name (``gang_context``): the
webhook and the request find the same ids without sharing anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

ON = False
_tracer: Any = None
_provider: Any = None
_lock = threading.Lock()


def configured(env: dict[str, str] | None = None) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces (module docstring)."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() not in ("otlp", ""):
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def setup(service: str) -> bool:
    """Start exporting this process's spans when configured (``OTEL_SERVICE_NAME`` wins over ``service``);
    whether traces are on. Called once by each process at startup; later calls change nothing."""
    global ON, _tracer, _provider
    with _lock:
        if ON or not configured():
            return ON
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or service})
        _provider = TracerProvider(resource=resource)
        _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        _tracer = _provider.get_tracer("gangweb")
        ON = True
        return True


def flush(timeout_seconds: float = 10.0) -> bool:
    """Export what is queued (tests, a command's end)."""
    return _provider.force_flush(int(timeout_seconds * 1000)) if ON else True


def _digest(text: str, size: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big") or 1


def gang_ids(namespace: str, name: str) -> tuple[int, int]:
    """(trace id, parent span id) of a gang's admission trace, derived from its name."""
    key = f"gangweb/gang/{namespace}/{name}"
    return _digest(key, 16), _digest(key + "/admission", 8)


def gang_context(namespace: str, name: str):
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    trace_id, span_id = gang_ids(namespace, name)
    parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return set_span_in_context(NonRecordingSpan(parent))


def gang_span(name: str, namespace: str, group: str, started_ns: int, **attributes: Any) -> None:
    """One finished span in the gang's trace (an admission review, the PodGroup ensured), begun at
    ``started_ns`` (``time.time_ns()``). The caller checks ``ON`` first."""
    span = _tracer.start_span(name, context=gang_context(namespace, group), start_time=started_ns)
    span.set_attributes({"k8s.namespace.name": namespace, "gangweb.podgroup": group, **attributes})
    span.end()


def start_request(namespace: str, name: str, **attributes: Any) -> tuple[str, str]:
    """The root span of a new preemption request's trace, linked to its gang's admission trace, begun now
    and ended at once (detection); (trace id, span id) in hex, for the ledger; ("", "") when off."""
    if not ON:
        return "", ""
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, get_current_span

    gang = get_current_span(gang_context(namespace, name)).get_span_context()
    span = _tracer.start_span(
        "detection", context=Context(), links=[Link(gang, {"gangweb.link": "admission"})]
    )
    span.set_attributes({"k8s.namespace.name": namespace, "gangweb.podgroup": name, **attributes})
    span.end()
    context = span.get_span_context()
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


_NOTHING = contextlib.nullcontext()


def stage(name: str, trace_id: str, span_id: str, **attributes: Any):
    """A span for one stage of a request (plan, re-check, dry runs, evictions) under its root; a shared
    no-op when off or when the request has no trace."""
    if not ON or not trace_id:
        return _NOTHING
    return _stage(name, trace_id, span_id, attributes)


@contextlib.contextmanager
def _stage(name: str, trace_id: str, span_id: str, attributes: dict[str, Any]) -> Iterator[None]:
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    root = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
    with _tracer.start_as_current_span(name, context=set_span_in_context(NonRecordingSpan(root))) as span:
        span.set_attributes(attributes)
        yield


def now_ns() -> int:
    return time.time_ns()
