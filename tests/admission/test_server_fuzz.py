"""``webhook serve`` fuzzed over TLS: at least 10,000 generated bodies per endpoint, every one answered,
never a 5xx, never an error logged. The status counts of a run are printed (``-s``) and recorded in
docs/admission.md.

The bodies mix well-formed reviews (pods, PodGroups, Workloads, controllers), the same with fields replaced
by arbitrary JSON or removed, with their bytes cut, overwritten or spliced, arbitrary JSON documents,
arbitrary bytes, and extremes (deep nesting, long strings, integers at the int32 and int64 edges), sent
with a JSON or another Content-Type, with a Content-Length or chunked. Requests go one after another over
one keep-alive connection per endpoint (it connects again when the server closes one).
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from admission import certs
from tests.admission.serving import NAMESPACE, SERVICE, start_server, stop_server
from tests.admission.support import load_owner, load_pod

BODIES_PER_ENDPOINT = 10_000
ENDPOINTS = ("/admission/mutate", "/admission/validate")
COUNTS: dict[str, Counter] = {endpoint: Counter() for endpoint in ENDPOINTS}

INTEGERS = st.integers() | st.sampled_from(
    [2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | INTEGERS
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=10,
)

POD_FIXTURES = [
    "job-parallel.yaml",
    "lws-worker.yaml",
    "kueue-podgroup.yaml",
    "yunikorn-spark-driver.yaml",
    "deployment-pod.yaml",
    "gangweb-labeled.yaml",
]
OWNERS = {
    "job-resnet-train.yaml": ("batch", "v1", "Job"),
    "jobset-llama-ft.yaml": ("jobset.x-k8s.io", "v1alpha2", "JobSet"),
    "leaderworkerset-vllm.yaml": ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"),
    "pytorchjob-gpt-neox.yaml": ("kubeflow.org", "v1", "PyTorchJob"),
}
PODGROUP = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "trainer", "namespace": "ml-team"},
    "spec": {
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "priorityClassName": "batch-high",
        "resourceClaims": [{"name": "imex-channel", "resourceClaimTemplateName": "imex-channel"}],
    },
}
WORKLOAD = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "w", "namespace": "ml-team"},
    "spec": {"podGroupTemplates": [{"name": "a", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
}
# Parsed once (YAML is slow), copied per example.
_OBJECTS = (
    {name: json.dumps(load_pod(name)) for name in POD_FIXTURES}
    | {name: json.dumps(load_owner(name)) for name in OWNERS}
    | {"podgroup": json.dumps(PODGROUP), "workload": json.dumps(WORKLOAD)}
)


def fresh(name: str) -> dict:
    return json.loads(_OBJECTS[name])


def fresh_copy(obj: dict) -> dict:
    return json.loads(json.dumps(obj))


def envelope(
    obj: dict | None,
    old: dict | None,
    operation: str,
    kind: tuple[str, str, str],
    *,
    dry_run: bool = False,
    uid: str = "fuzz",
) -> dict:
    """An AdmissionReview request as kube-apiserver sends it (tests.admission.support.review, without its
    deep copies: the objects here are fresh already)."""
    group, version, kind_name = kind
    metadata = (obj or old or {}).get("metadata") or {}
    resource = {"group": group, "version": version, "resource": kind_name.lower() + "s"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind_name},
            "resource": resource,
            "requestKind": {"group": group, "version": version, "kind": kind_name},
            "requestResource": resource,
            "name": metadata.get("name", ""),
            "namespace": metadata.get("namespace", ""),
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"},
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
        },
    }


ENVELOPE_FIELDS = [
    "uid",
    "kind",
    "operation",
    "namespace",
    "name",
    "object",
    "oldObject",
    "dryRun",
    "userInfo",
]
OBJECT_PATHS = [
    ("metadata",),
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("metadata", "ownerReferences"),
    ("metadata", "name"),
    ("spec",),
    ("spec", "schedulingGroup"),
    ("spec", "priority"),
    ("spec", "priorityClassName"),
    ("spec", "schedulerName"),
    ("spec", "containers"),
    ("spec", "schedulingPolicy"),
    ("spec", "template"),
    ("spec", "replicatedJobs"),
    ("spec", "resourceClaims"),
]


@st.composite
def well_formed(draw) -> dict:
    """A review as kube-apiserver would send it: a pod, a PodGroup, a Workload or a controller."""
    what = draw(st.sampled_from(["pod", "pod", "pod", "podgroup", "workload", "owner"]))
    operation = draw(st.sampled_from(["CREATE", "CREATE", "UPDATE", "DELETE", "CONNECT"]))
    if what == "pod":
        obj, kind = fresh(draw(st.sampled_from(POD_FIXTURES))), ("", "v1", "Pod")
        if draw(st.booleans()):
            obj["spec"]["schedulingGroup"] = {
                "podGroupName": draw(st.sampled_from(["trainer", "resnet-train", "x"]))
            }
        if draw(st.booleans()):  # DRA: an entry of the PodGroup's (KEP-5729), or a near miss
            template = draw(st.sampled_from(["imex-channel", "imex-v2"]))
            obj["spec"]["resourceClaims"] = [{"name": "imex-channel", "resourceClaimTemplateName": template}]
    elif what == "podgroup":
        obj, kind = fresh("podgroup"), ("scheduling.k8s.io", "v1beta1", "PodGroup")
    elif what == "workload":
        obj, kind = fresh("workload"), ("scheduling.k8s.io", "v1beta1", "Workload")
    else:
        owner = draw(st.sampled_from(sorted(OWNERS)))
        obj, kind = fresh(owner), OWNERS[owner]
    old = fresh_copy(obj) if operation in ("UPDATE", "DELETE") else None
    return envelope(
        None if operation == "DELETE" else obj,
        old,
        operation,
        kind,
        dry_run=draw(st.booleans()),
        uid=f"fuzz-{draw(st.integers(0, 10**6))}",
    )


@st.composite
def mangled(draw) -> bytes:
    """A well-formed review with envelope fields and fields inside its object replaced or removed."""
    data = draw(well_formed())
    request = data["request"]
    for field in draw(st.lists(st.sampled_from(ENVELOPE_FIELDS), max_size=3)):
        if draw(st.booleans()):
            request.pop(field, None)
        else:
            request[field] = draw(json_values)
    target = request.get("object") if isinstance(request.get("object"), dict) else None
    for path in draw(st.lists(st.sampled_from(OBJECT_PATHS), max_size=3)) if target is not None else ():
        parent = target
        for key in path[:-1]:
            parent = parent.setdefault(key, {}) if isinstance(parent.get(key, {}), dict) else {}
        parent[path[-1]] = draw(json_values)
    if draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["apiVersion", "kind"]))] = draw(json_values)
    return json.dumps(data, ensure_ascii=draw(st.booleans())).encode()


@st.composite
def spliced(draw) -> bytes:
    """A well-formed review's bytes cut short, overwritten, or with random bytes put in."""
    body = bytearray(json.dumps(draw(well_formed())).encode())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(body)))
        edit = draw(st.sampled_from(["cut", "overwrite", "insert", "delete"]))
        noise = draw(st.binary(min_size=1, max_size=8))
        if edit == "cut":
            del body[at:]
        elif edit == "overwrite":
            body[at : at + len(noise)] = noise
        elif edit == "insert":
            body[at:at] = noise
        else:
            del body[at : at + len(noise)]
    return bytes(body)


def _extreme_bodies() -> list[bytes]:
    """Built once: deep nesting around the parsers' limits, long strings, many annotations, integers at the
    int32 and int64 edges, as ASCII and as UTF-8."""
    bodies = [
        opener * depth + b"1" + closer * depth
        for depth in (64, 512, 1023, 1024, 1025, 5000)
        for opener, closer in ((b"[", b"]"), (b'{"a":', b"}"))
    ]
    variants = []
    for size in (1, 1000, 100_000):
        variants.append(lambda pod, size=size: pod["metadata"]["labels"].update(x="é" * size))
    for count in (10, 1000, 20_000):
        variants.append(
            lambda pod, count=count: pod["metadata"].update(annotations={f"k{n}": "v" for n in range(count)})
        )
    for priority in (2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30):
        variants.append(lambda pod, priority=priority: pod["spec"].update(priority=priority))
    for change in variants:
        pod = fresh("job-parallel.yaml")
        change(pod)
        for ascii_only in (True, False):
            data = envelope(pod, None, "CREATE", ("", "v1", "Pod"))
            bodies.append(json.dumps(data, ensure_ascii=ascii_only).encode())
    return bodies


EXTREMES = _extreme_bodies()


BODIES = st.one_of(
    well_formed().map(lambda data: json.dumps(data).encode()),
    mangled(),
    spliced(),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=600),
    st.sampled_from(EXTREMES),
)
CONTENT_TYPES = st.sampled_from(
    ["application/json"] * 16 + ["application/json; charset=utf-8", "text/plain", ""]
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    certs.ensure_certificates(directory, SERVICE, NAMESPACE)
    handle = start_server(directory)
    yield handle
    stop_server(handle)
    log = (directory / "server.log").read_text(errors="replace")
    # A parsing gap or a rule's bug is answered (400, or allowed), but logged as an error: none may happen.
    errors = [line for line in log.splitlines() if '"level": "ERROR"' in line or "Traceback" in line]
    assert not errors, errors[:3]


BATCH = 20  # bodies per hypothesis example: its per-example cost, amortized
FUZZ = settings(
    max_examples=BODIES_PER_ENDPOINT // BATCH,
    deadline=None,
    database=None,
    phases=[Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_body_is_answered_without_a_5xx(server, endpoint):
    connection = server.connection(timeout=30)
    counts = COUNTS[endpoint]
    chunking = random.Random(endpoint)  # which bodies go chunked: not hypothesis's to shrink

    def post(body: bytes, content_type: str) -> None:
        headers = {"Content-Type": content_type} if content_type else {}
        if chunking.random() < 0.05 and body:
            connection.request(
                "POST",
                endpoint,
                body=iter([body[: len(body) // 2], body[len(body) // 2 :]]),
                headers=headers,
                encode_chunked=True,
            )
        else:
            connection.request("POST", endpoint, body=body, headers=headers)
        response = connection.getresponse()  # a hang or a dropped connection raises: the example fails
        payload = response.read()
        counts[response.status] += 1
        assert response.status < 500, (response.status, payload[:300])
        assert response.getheader("Content-Type") == "application/json"
        answer = json.loads(payload)
        if response.status == 200:
            assert answer["kind"] == "AdmissionReview" and isinstance(answer["response"]["allowed"], bool)
        else:
            assert (
                response.status in (400, 413)
                and answer["kind"] == "Status"
                and answer["code"] == response.status
            )

    @FUZZ
    @given(batch=st.lists(st.tuples(BODIES, CONTENT_TYPES), min_size=BATCH, max_size=BATCH))
    def post_all(batch: list[tuple[bytes, str]]) -> None:
        for body, content_type in batch:
            post(body, content_type)

    post_all()
    answered = sum(counts.values())
    print(f"\n{endpoint}: {answered} bodies, status counts {dict(sorted(counts.items()))}")
    assert answered >= BODIES_PER_ENDPOINT
    assert not any(status >= 500 for status in counts)
    assert server.process.poll() is None
