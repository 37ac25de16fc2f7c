"""The Django endpoints /admission/mutate and /admission/validate, fuzzed: never a 5xx, always JSON."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.admission.support import load_pod, review, review_bytes

ENDPOINTS = ("/admission/mutate", "/admission/validate")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = ["uid", "kind", "operation", "namespace", "name", "object", "oldObject", "dryRun", "userInfo"]


@st.composite
def mangled_reviews(draw):
    """Well-formed reviews with one or more fields replaced by arbitrary JSON (or removed)."""
    data = review(
        load_pod(
            draw(
                st.sampled_from(
                    [
                        "job-parallel.yaml",
                        "lws-worker.yaml",
                        "kueue-podgroup.yaml",
                        "yunikorn-spark-driver.yaml",
                        "deployment-pod.yaml",
                    ]
                )
            )
        ),
        uid=str(draw(st.uuids())),
    )
    for field in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3)):
        if draw(st.booleans()):
            data["request"].pop(field, None)
        else:
            data["request"][field] = draw(json_values)
    if draw(st.booleans()):
        data["request"]["object"] = {"metadata": draw(json_values), "spec": draw(json_values)}
    return json.dumps(data).encode()


class _Errors(logging.Handler):
    """Collects errors the handler logs when it had to catch something unexpected."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


UNEXPECTED = _Errors()
logging.getLogger("admission.handler").addHandler(UNEXPECTED)


@pytest.fixture(autouse=True)
def demo(settings):
    """The dashboard process serves these paths only in the demo (tests/admission/test_dashboard_paths.py)."""
    settings.DEMO = True


@pytest.fixture(autouse=True)
def no_dashboard_events(monkeypatch):
    """The views' webhook records decisions for the dashboard, and its thread publishes them through the
    channel layer, which draws channel names from ``random`` while hypothesis is drawing examples
    (HypothesisDeprecationWarning). The recording has its own tests; here it is switched off."""
    from admission.runtime import get_webhook

    webhook = get_webhook()
    if webhook.recorder is not None:
        webhook.recorder.flush()
    monkeypatch.setattr(webhook, "recorder", None)


def post(client: Client, endpoint: str, body: bytes):
    return client.generic("POST", endpoint, body, content_type="application/json")


def check(response) -> dict:
    assert response.status_code < 500
    # A catch-all answer is still a bug: the rules must handle every shape themselves.
    assert not UNEXPECTED.records, UNEXPECTED.records[0].getMessage()
    assert response["Content-Type"] == "application/json"
    payload = json.loads(response.content)
    if response.status_code == 200:
        assert payload["apiVersion"] == "admission.k8s.io/v1" and payload["kind"] == "AdmissionReview"
        assert isinstance(payload["response"]["allowed"], bool)
    else:
        assert response.status_code in (400, 413) and payload["kind"] == "Status"
    return payload


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(endpoint=st.sampled_from(ENDPOINTS), body=st.binary(max_size=300))
def test_random_bytes_never_give_5xx(endpoint, body):
    check(post(Client(), endpoint, body))


@FUZZ
@given(endpoint=st.sampled_from(ENDPOINTS), body=json_values.map(lambda value: json.dumps(value).encode()))
def test_random_json_never_gives_5xx(endpoint, body):
    response = post(Client(), endpoint, body)
    check(response)


@FUZZ
@given(endpoint=st.sampled_from(ENDPOINTS), body=mangled_reviews())
def test_mangled_reviews_never_give_5xx(endpoint, body):
    check(post(Client(), endpoint, body))


def test_view_answers_like_the_server():
    response = post(Client(), "/admission/mutate", review_bytes(load_pod("job-parallel.yaml"), uid="view-1"))
    payload = check(response)
    assert response.status_code == 200 and payload["response"]["uid"] == "view-1"
    assert payload["response"]["patchType"] == "JSONPatch"


def test_get_is_not_allowed():
    response = Client().get("/admission/validate")
    assert response.status_code == 405 and json.loads(response.content)["code"] == 405


def test_body_above_the_django_upload_limit_is_read_and_judged_by_the_webhook(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = post(Client(), "/admission/mutate", review_bytes(load_pod("job-parallel.yaml")))
    assert response.status_code == 200


def test_oversized_body_gets_413():
    response = post(Client(), "/admission/validate", b" " * (7 * 1024 * 1024 + 1))
    assert response.status_code == 413 and json.loads(response.content)["code"] == 413


def test_non_json_content_type_gets_400():
    response = Client().generic("POST", "/admission/mutate", b"{}", content_type="text/plain")
    assert response.status_code == 400


def parse_outcome(parse, body: bytes) -> tuple:
    """What a parser made of ``body``, comparable between the typed fast path and the generic parser."""
    from admission.podview import Pod, resource_requirements
    from admission.review import ReviewError

    def comparable(pod):
        # An empty pod object ({}) is "no pod" to the generic parser and an all-defaults view to the
        # fast one: the rules treat both alike. Resources are JSON text, spaced as each parser left it.
        if pod is None or pod == Pod():
            return None
        containers = [resource_requirements(c.resources) for c in pod.spec.containers or ()]
        return pod.metadata, pod.spec.group_name, pod.spec.priority, pod.spec.schedulerName, containers

    try:
        request = parse(body)
    except ReviewError as error:
        return ("error", error.status)
    return (
        "ok",
        request.uid,
        request.kind,
        request.group,
        request.operation,
        request.namespace,
        request.name,
        request.dry_run,
        comparable(request.pod),
        comparable(request.old_pod),
        request.object,
        request.old_object,
    )


# Plausible wrong values for the envelope: arbitrary JSON seldom lands on a string the fast path accepts.
PLAUSIBLE = [
    "",
    "abc",
    "CREATE",
    "UPDATE",
    "DELETE",
    "CONNECT",
    "Pod",
    "v1",
    None,
    0,
    True,
    [],
    {},
    {"kind": "Pod"},
    {"group": "", "version": "v1", "kind": "Pod"},
    {"group": "batch", "version": "v1", "kind": "Job"},
    {"group": "example.com", "version": "v1", "kind": "Pod"},
    {"username": 5},
]
ENVELOPE = [("request", field) for field in FIELDS] + [(None, "apiVersion"), (None, "kind")]


@pytest.mark.parametrize("where", ENVELOPE, ids=[field for _, field in ENVELOPE])
def test_the_typed_fast_path_agrees_with_the_generic_parser_on_the_envelope(where):
    """ASCII pod reviews decode straight into the pod views; for every envelope field and every value
    below (and the field missing) the generic parser must come to the same request, or the same error."""
    from admission.review import _parse_generic, parse_review

    parent, field = where
    for value in [*PLAUSIBLE, "<missing>"]:
        data = review(load_pod("job-parallel.yaml"), uid="u-1")
        target = data[parent] if parent else data
        if value == "<missing>":
            target.pop(field, None)
        else:
            target[field] = value
        body = json.dumps(data).encode()
        assert body.isascii()
        assert parse_outcome(parse_review, body) == parse_outcome(_parse_generic, body), (field, value)


@st.composite
def mangled_pods(draw):
    """Pod reviews with fields deep inside the pod replaced by arbitrary JSON."""
    pod = load_pod(draw(st.sampled_from(["job-parallel.yaml", "lws-worker.yaml", "kueue-podgroup.yaml"])))
    for path in draw(
        st.lists(
            st.sampled_from(
                [
                    ("metadata", "labels"),
                    ("metadata", "annotations"),
                    ("metadata", "ownerReferences"),
                    ("metadata", "name"),
                    ("spec", "schedulingGroup"),
                    ("spec", "priority"),
                    ("spec", "schedulerName"),
                    ("spec", "containers"),
                    ("spec", "resourceClaims"),
                ]
            ),
            min_size=1,
            max_size=3,
        )
    ):
        pod.setdefault(path[0], {})[path[1]] = draw(json_values)
    return review_bytes(
        pod, operation=draw(st.sampled_from(["CREATE", "UPDATE"])), old=draw(st.none() | st.just(pod))
    )


@FUZZ
@given(body=mangled_pods())
def test_the_typed_fast_path_agrees_with_the_generic_parser_inside_the_pod(body):
    from admission.review import _parse_generic, parse_review

    assert parse_outcome(parse_review, body) == parse_outcome(_parse_generic, body)
