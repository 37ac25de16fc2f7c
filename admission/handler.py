"""One webhook request, end to end: bytes in, (HTTP status, bytes) out.

Shared by the Django views and the production HTTPS server, so both answer identically. Bad input is
a 400/413 with a JSON Status; a bug in a decision rule must not turn into a 5xx or a blocked pod
either: it is logged, counted, and answered "allowed" (failing open, like ``failurePolicy: Ignore``).
"""

from __future__ import annotations

import logging
import time
from typing import Any, NamedTuple

import msgspec

from admission.inference import Gang, gang_of
from admission.metrics import AdmissionStats
from admission.mutate import Mutation, mutate_pod
from admission.policy import AdmissionPolicy
from admission.recorder import DecisionRecorder
from admission.review import MAX_BODY_BYTES, AdmissionRequest, ReviewError, build_response, parse_review
from admission.state import PodGroupCache
from admission.validate import validate
from scheduler import tracing

logger = logging.getLogger(__name__)

MUTATE, VALIDATE = "mutate", "validate"


class Answer(msgspec.Struct, gc=False):
    status: int
    body: bytes


class Decision(NamedTuple):
    """What the dashboard hears about one answer."""

    uid: str
    webhook: str
    kind: str
    namespace: str
    name: str
    operation: str
    dry_run: bool
    allowed: bool
    message: str
    warnings: tuple[str, ...] = ()
    pod_group: str = ""
    source: str = ""
    min_count: int | None = None
    mode: str = ""

    @classmethod
    def of(
        cls,
        request: AdmissionRequest,
        webhook: str,
        allowed: bool,
        message: str,
        warnings: list[str],
        gang: Gang | None = None,
    ) -> Decision:
        common = (
            request.uid,
            webhook,
            request.kind,
            request.namespace,
            request.object_name(),
            request.operation,
            request.dry_run,
            allowed,
            message,
            tuple(warnings),
        )
        if gang is None:
            return cls(*common)
        return cls(*common, gang.name, gang.source, gang.min_count, gang.mode)

    def as_event(self) -> dict[str, Any]:
        event: dict[str, Any] = {
            "uid": self.uid,
            "webhook": self.webhook,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "operation": self.operation,
            "dryRun": self.dry_run,
            "allowed": self.allowed,
            "message": self.message,
            "warnings": list(self.warnings),
        }
        if self.pod_group:
            event.update(podGroup=self.pod_group, source=self.source, minCount=self.min_count, mode=self.mode)
        return event


class PendingMutation(msgspec.Struct, gc=False):
    """A patched pod the dashboard may hear about. Only the newest ``max_batch`` decisions of each
    recorder interval are published, so the ``Decision`` (and the gang's size and mode in it) is worked
    out when it is, on the recorder's thread, not for every pod on the request path."""

    request: AdmissionRequest
    mutation: Mutation
    policy: AdmissionPolicy

    def as_event(self) -> dict[str, Any]:
        request = self.request
        gang = (
            gang_of(request.pod.metadata, request.namespace, self.policy) if request.pod is not None else None
        )
        return Decision.of(request, MUTATE, True, self.mutation.reason, [], gang).as_event()


class Webhook:
    def __init__(
        self,
        policy: AdmissionPolicy,
        podgroups: PodGroupCache | None = None,
        recorder: DecisionRecorder | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.policy = policy
        # The PodGroups the API server holds (admission.watch fills it); validation reads nothing else.
        self.podgroups = podgroups if podgroups is not None else PodGroupCache()
        self.recorder = recorder
        self.max_body_bytes = max_body_bytes
        self.stats = AdmissionStats()

    def precheck(self, content_type: str, declared_length: int | None) -> Answer | None:
        """Reject before reading the body: an oversized declared length, or a body that is not JSON."""
        if declared_length is not None and declared_length > self.max_body_bytes:
            error = ReviewError(
                413, f"request body is {declared_length} bytes; the limit is {self.max_body_bytes}"
            )
            return Answer(413, error.body())
        if content_type and "json" not in content_type.lower():
            return Answer(
                400,
                ReviewError(400, f"Content-Type must be application/json, got {content_type[:80]!r}").body(),
            )
        return None

    def too_large(self) -> Answer:
        return Answer(413, ReviewError(413, f"request body exceeds {self.max_body_bytes} bytes").body())

    def handle(self, webhook: str, body: bytes) -> Answer:
        started = time.perf_counter()
        traced_from = tracing.now_ns() if tracing.ON else 0
        try:
            request = parse_review(body, self.max_body_bytes)
        except ReviewError as error:
            self.stats.count(webhook, "bad_request")
            return Answer(error.status, error.body())
        except Exception:
            # A parsing gap is still the body's fault, and never worth a 5xx: log it to fix it.
            logger.exception("unexpected error parsing an AdmissionReview", extra={"webhook": webhook})
            self.stats.count(webhook, "bad_request")
            return Answer(400, ReviewError(400, "request body is not a well-formed AdmissionReview").body())
        try:
            answer, decision = self._mutate(request) if webhook == MUTATE else self._validate(request)
        except Exception:
            logger.exception(
                "admission rule failed; allowing", extra={"uid": request.uid, "webhook": webhook}
            )
            answer, decision = Answer(200, build_response(request.uid, allowed=True)), "error"
        self.stats.decided(webhook, decision, time.perf_counter() - started)
        if traced_from:
            self._trace(webhook, request, decision, traced_from)
        return answer

    def _trace(self, webhook: str, request: AdmissionRequest, decision: str, started_ns: int) -> None:
        """The review as a span of its gang's trace (``scheduler.tracing``), when its pod is in a PodGroup."""
        pod = request.pod
        if pod is None:
            return
        group = pod.spec.group_name or (mutate_pod(request, self.policy).group if webhook == MUTATE else "")
        if group:
            attributes = {
                "gangweb.webhook": webhook,
                "gangweb.decision": decision,
                "k8s.pod.name": request.name,
            }
            tracing.gang_span("admission review", request.namespace, group, started_ns, **attributes)

    # Each returns the answer and the decision it is counted under (admission.metrics.DECISIONS).
    def _mutate(self, request: AdmissionRequest) -> tuple[Answer, str]:
        mutation = mutate_pod(request, self.policy)
        if not mutation.encoded_patch:
            return Answer(200, build_response(request.uid)), "untouched"
        unserved = self.podgroups.unserved
        if unserved:  # a pod naming a PodGroup the cluster cannot hold would wait forever, or lose the field
            warning = f"gangweb left the pod out of PodGroup {mutation.group}: {unserved}"
            return Answer(200, build_response(request.uid, warnings=[warning])), "untouched"
        recorder = self.recorder
        if recorder is not None:
            recorder.offer(PendingMutation(request, mutation, self.policy))
        return Answer(200, build_response(request.uid, encoded_patch=mutation.encoded_patch)), "patched"

    def _validate(self, request: AdmissionRequest) -> tuple[Answer, str]:
        verdict = validate(request, self.policy, self.podgroups)
        decision = ("warned" if verdict.warnings else "allowed") if verdict.allowed else "denied"
        if (verdict.warnings or not verdict.allowed) and self.recorder is not None:
            self.recorder.offer(
                Decision.of(request, VALIDATE, verdict.allowed, verdict.message, verdict.warnings)
            )
        response = build_response(
            request.uid, allowed=verdict.allowed, message=verdict.message, warnings=verdict.warnings
        )
        return Answer(200, response), decision
