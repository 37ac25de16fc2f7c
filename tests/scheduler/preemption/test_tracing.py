"""OpenTelemetry traces (scheduler/tracing.py) exported over OTLP/HTTP to a real receiver in the test, a
small HTTP server decoding the protobuf export requests: the admission review in its gang's trace, and one
trace per preemption request (detection, plan, re-check, dry runs, evictions) linked to it, its id in the
ledger and the API."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth.models import User
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from admission.handler import Webhook
from admission.labels import MIN_COUNT_ANNOTATION, POD_GROUP_LABEL
from gangweb.access.grants import grant
from scheduler import tracing
from scheduler.preemption import ledger
from scheduler.preemption.models import PreemptionRequest, RequestState
from scheduler.preemption.tasks import detect_unschedulable_gangs
from tests.admission.support import review_bytes
from tests.realcluster.test_control_plane import OBSERVE, pod

pytestmark = pytest.mark.django_db(transaction=True)


class Receiver:
    """An OTLP/HTTP trace receiver: POST /v1/traces, protobuf, each span kept as a dict."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                export = ExportTraceServiceRequest()
                export.ParseFromString(raw)
                for resource in export.resource_spans:
                    service = {a.key: a.value.string_value for a in resource.resource.attributes}[
                        "service.name"
                    ]
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            receiver.spans.append(
                                {
                                    "service": service,
                                    "name": span.name,
                                    "trace": span.trace_id.hex(),
                                    "span": span.span_id.hex(),
                                    "parent": span.parent_span_id.hex(),
                                    "links": [
                                        (link.trace_id.hex(), link.span_id.hex()) for link in span.links
                                    ],
                                    "attributes": {a.key: a.value for a in span.attributes},
                                }
                            )
                receiver.paths.append(self.path)
                body = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver(monkeypatch, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_LOCK_TTL_SECONDS = 2
    found = Receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", found.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "gangweb-test")
    monkeypatch.setattr(tracing, "ON", False)
    assert tracing.setup("gangweb")
    yield found
    tracing._provider.shutdown()
    monkeypatch.setattr(tracing, "ON", False)
    found.server.shutdown()


def test_traces_are_off_unless_an_otlp_endpoint_is_named(monkeypatch):
    assert not tracing.ON  # the suite runs without OTEL_* variables: no trace, nothing imported
    assert not tracing.configured({})
    assert tracing.configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.configured({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert not tracing.configured(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    )
    assert not tracing.configured(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}
    )
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="test")
    assert (request.trace_id, request.trace_span) == ("", "")
    assert tracing.stage("plan", "", "") is tracing.stage("evictions", "", "")  # one shared no-op


def test_one_trace_per_request_linked_to_its_gangs_admission(receiver, cluster):
    member = pod(
        "team-a", "train-0", labels={POD_GROUP_LABEL: "train"}, annotations={MIN_COUNT_ANNOTATION: "4"}
    )
    answer = Webhook(OBSERVE).handle("mutate", review_bytes(member))
    assert answer.status == 200

    detect_unschedulable_gangs.apply().get()
    [request] = PreemptionRequest.objects.all()
    assert request.state == RequestState.SUCCEEDED, request.reason
    assert tracing.flush()

    [review] = [s for s in receiver.spans if s["name"] == "admission review"]
    assert review["trace"] == f"{tracing.gang_ids('team-a', 'train')[0]:032x}"
    assert review["attributes"]["gangweb.decision"].string_value == "patched"
    ours = [s for s in receiver.spans if s["trace"] == request.trace_id]
    assert {s["name"] for s in ours} == {"detection", "plan", "re-check", "dry runs", "evictions"}
    [root] = [s for s in ours if s["name"] == "detection"]
    assert root["span"] == request.trace_span and root["parent"] == ""
    assert all(s["parent"] == root["span"] for s in ours if s is not root)
    assert root["links"] == [(review["trace"], review["parent"])]  # the gang's admission trace
    assert {s["service"] for s in receiver.spans} == {"gangweb-test"}
    assert set(receiver.paths) == {"/v1/traces"}

    grant("root", "admin", all_namespaces=True)
    client = Client()
    client.force_login(User.objects.get(username="root"))
    assert client.get(f"/api/v1/requests/{request.pk}/").json()["traceId"] == request.trace_id
