"""The AdmissionReview v1 envelope: the rules kube-apiserver enforces on responses
(ported from apiserver's admissionreview_test.go VerifyAdmissionResponse cases) and 400/413 on bad bodies."""

from __future__ import annotations

import base64
import json

import pytest

from admission.handler import MUTATE, VALIDATE, Webhook
from admission.policy import AdmissionPolicy
from tests.admission.support import load_pod, review, review_bytes

WEBHOOK = Webhook(AdmissionPolicy())


def answer(webhook: str, body: bytes) -> tuple[int, dict]:
    result = WEBHOOK.handle(webhook, body)
    return result.status, json.loads(result.body)


@pytest.mark.parametrize("webhook", [MUTATE, VALIDATE])
def test_response_echoes_uid_api_version_and_kind(webhook):
    status, body = answer(webhook, review_bytes(load_pod("job-parallel.yaml"), uid="4b1f3c2e-9a57"))
    assert status == 200
    assert (body["apiVersion"], body["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert body["response"]["uid"] == "4b1f3c2e-9a57"
    assert body["response"]["allowed"] is True


def test_mutating_patch_comes_with_patch_type():
    _, body = answer(MUTATE, review_bytes(load_pod("job-parallel.yaml")))
    response = body["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": "resnet-train"}}
    ]


def test_untouched_pod_gets_neither_patch_nor_patch_type():
    _, body = answer(MUTATE, review_bytes(load_pod("deployment-pod.yaml")))
    assert set(body["response"]) == {"uid", "allowed"}


def test_validating_never_returns_a_patch():
    for fixture in ("job-parallel.yaml", "gangweb-labeled.yaml"):
        _, body = answer(VALIDATE, review_bytes(load_pod(fixture)))
        assert "patch" not in body["response"] and "patchType" not in body["response"]


def test_denial_carries_status_403_and_message():
    pod = load_pod("lws-worker.yaml")
    pod["metadata"]["annotations"]["gangweb.io/min-count"] = "9"
    _, body = answer(VALIDATE, review_bytes(pod))
    response = body["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 403 and response["status"]["reason"] == "Forbidden"
    assert "lower gangweb.io/min-count to 4" in response["status"]["message"]


def test_query_string_timeout_does_not_matter_and_delete_with_null_object_is_fine():
    pod = load_pod("job-parallel.yaml")
    status, body = answer(VALIDATE, review_bytes(None, operation="DELETE", old=pod))
    assert status == 200 and body["response"]["allowed"] is True


def _envelope(**changes):
    data = review(load_pod("job-parallel.yaml"))
    for path, value in changes.items():
        target = data
        *parents, last = path.split("__")
        for key in parents:
            target = target[key]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return json.dumps(data).encode()


BAD_BODIES = {
    "empty": b"",
    "not json": b"{",
    "not utf-8": b'{"apiVersion": "\xff\xfe"}',
    "json array": b"[]",
    "json string": b'"AdmissionReview"',
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "v1beta1": _envelope(apiVersion="admission.k8s.io/v1beta1"),
    "wrong kind": _envelope(kind="Pod"),
    "no request": _envelope(request=KeyError),
    "request not object": _envelope(request=[1]),
    "no uid": _envelope(request__uid=KeyError),
    "empty uid": _envelope(request__uid=""),
    "uid not string": _envelope(request__uid=7),
    "no object on create": _envelope(request__object=None),
    "object wrong type": _envelope(request__object="pod"),
    "kind missing": _envelope(request__kind=KeyError),
    "kind wrong type": _envelope(request__kind="Pod"),
    "bad operation": _envelope(request__operation="PATCH"),
    "dryRun not bool": _envelope(request__dryRun="yes"),
    "namespace not string": _envelope(request__namespace=["a"]),
    "oldObject wrong type": _envelope(request__oldObject=3),
}


@pytest.mark.parametrize("webhook", [MUTATE, VALIDATE])
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_malformed_reviews_get_400_with_a_json_status(webhook, case):
    status, body = answer(webhook, BAD_BODIES[case])
    assert status == 400
    assert body["kind"] == "Status" and body["code"] == 400 and body["message"]


def test_oversized_body_gets_413():
    small = Webhook(AdmissionPolicy(), max_body_bytes=1000)
    result = small.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml")))
    assert result.status == 413
    assert json.loads(result.body)["reason"] == "RequestEntityTooLarge"


def test_lone_surrogate_escapes_are_not_well_formed_json_text():
    status, decoded = answer(MUTATE, _envelope(request__uid="\ud800x"))
    assert status == 400 and "surrogate" in decoded["message"]


def _pod_body(priority: int, ascii_only: bool) -> bytes:
    """A gang pod's CREATE review with ``spec.priority`` set; with ``ascii_only`` False an annotation
    holds an ``é``, which sends the body down the generic parser instead of the typed fast path."""
    pod = load_pod("job-parallel.yaml")
    pod["spec"]["priority"] = priority
    if not ascii_only:
        pod["metadata"].setdefault("annotations", {})["example.com/owner"] = "José"
    body = json.dumps(review(pod, uid="prio"), ensure_ascii=False).encode()
    assert body.isascii() is ascii_only
    return body


@pytest.mark.parametrize("webhook", [MUTATE, VALIDATE])
@pytest.mark.parametrize("priority", [2**31, -(2**31) - 1, 2**63, 2**64, -(2**63) - 1, 10**30])
def test_priority_outside_int32_is_a_400_whichever_parser_reads_the_body(webhook, priority):
    """``spec.priority`` is an int32 in the API: no API server sends more. Both parse paths refuse it alike
    (the fast path used to patch what the generic parser refused, for values beyond int64)."""
    answers = [answer(webhook, _pod_body(priority, ascii_only)) for ascii_only in (True, False)]
    assert [status for status, _ in answers] == [400, 400]
    assert answers[0][1]["message"] == answers[1][1]["message"]
    assert "request.object.spec.priority" in answers[0][1]["message"]


@pytest.mark.parametrize("webhook", [MUTATE, VALIDATE])
@pytest.mark.parametrize("priority", [2**31 - 1, -(2**31), 0])
def test_priority_inside_int32_is_read_by_both_parsers(webhook, priority):
    answers = [answer(webhook, _pod_body(priority, ascii_only)) for ascii_only in (True, False)]
    assert [status for status, _ in answers] == [200, 200]
    assert answers[0][1]["response"] == answers[1][1]["response"]
