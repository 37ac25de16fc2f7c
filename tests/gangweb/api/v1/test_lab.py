"""The what-if lab on the API v1: ``POST simulate/podgroups/`` lists an uploaded dump's gangs before one
is picked, ``POST simulate/`` with ``maps`` adds each plan's small map; the old contract unchanged,
nothing executed or recorded, the reader's scope, bad input, CSRF on a session and the shared throttle."""

from __future__ import annotations

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from scheduler.preemption.models import LedgerEntry, PreemptionRequest
from scheduler.simulation import SimulatedCluster
from testkit.synthetic import synthetic_cluster
from tests.gangweb.api.v1.conftest import HIDDEN, token_reader, world_objects
from tests.gangweb.api.v1.test_contract import problem

pytestmark = pytest.mark.django_db(transaction=True)
POLICIES = "gangweb,kep5710,legacy"


@pytest.fixture(scope="module")
def dump() -> bytes:
    """What ``kubectl get ... -A -o yaml`` prints for a simulated 16-node cluster with gangs waiting."""
    cluster = SimulatedCluster(nodes=16, seed=11)
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": cluster.snapshot_objects()}).encode()


def upload(content: bytes, name: str = "dump.yaml") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/yaml")


def test_an_uploaded_dump_lists_its_gangs_then_plans_one_with_small_maps(client, admin, dump):
    listed = client.post("/api/v1/simulate/podgroups/", {"snapshot": upload(dump)}, **admin)
    assert listed.status_code == 200, listed.content
    body = listed.json()
    assert body["source"] == "snapshot"
    gangs = body["podGroups"]
    states = [g["state"] for g in gangs]
    assert "waiting" in states and states.index("waiting") < states.index("running"), "waiting first"
    assert all(g["podGroup"] == f"{g['namespace']}/{g['name']}" for g in gangs)
    waiting = [g for g in gangs if g["state"] == "waiting"]
    planned = 0
    for gang in waiting[:4]:
        answer = client.post(
            "/api/v1/simulate/",
            {"snapshot": upload(dump), "podGroup": gang["podGroup"], "policies": POLICIES, "maps": "true"},
            **admin,
        )
        assert answer.status_code == 200, answer.content
        plans = answer.json()["plans"]
        assert [p["policy"] for p in plans] == POLICIES.split(",")
        for p in plans:
            assert p["about"] and " 1 pods" not in p["summary"] and " 1 units" not in p["summary"]
            if p["feasible"] and p["evictions"]:
                planned += 1
                squares = [s for n in p["map"] for s in n["squares"]]
                assert squares.count("victim") + squares.count("victim placed") == p["cost"]["evictedGpus"]
                assert any("placed" in s for s in squares)
    assert planned, "some waiting gang of the dump is placed by preemption"
    assert not PreemptionRequest.objects.exists() and not LedgerEntry.objects.exists()


def test_simulate_without_maps_answers_as_before(client, world, admin):
    body = client.post(
        "/api/v1/simulate/", {"podGroup": "team-a/train"}, content_type="application/json", **admin
    ).json()
    [plan] = body["plans"]
    assert "map" not in plan
    assert {
        "podGroup",
        "policy",
        "feasible",
        "victims",
        "evictions",
        "placement",
        "cost",
        "planningSeconds",
    } <= set(plan)
    assert plan["summary"] == "evicts 2 pods in 1 unit, 16 GPUs"


def test_a_reader_lists_only_the_gangs_it_may_simulate(client, world, a_viewer, admin):
    document = {"kind": "List", "items": world_objects()}
    for snapshot in ({}, {"snapshot": document}):  # the live cluster, then an inline snapshot
        mine = client.post(
            "/api/v1/simulate/podgroups/", snapshot, content_type="application/json", **a_viewer
        )
        assert mine.status_code == 200, mine.content
        assert [g["podGroup"] for g in mine.json()["podGroups"]] == ["team-a/train"]
        assert not any(word in mine.content.decode() for word in HIDDEN)
        everything = client.post(
            "/api/v1/simulate/podgroups/", snapshot, content_type="application/json", **admin
        )
        assert {"team-b/waiting-b", "batch/low"} <= {g["podGroup"] for g in everything.json()["podGroups"]}
    assert mine.json()["source"] == "snapshot"
    # a victim of a namespace the reader does not see keeps its numbers and loses its names
    planned = client.post(
        "/api/v1/simulate/",
        {"podGroup": "team-a/train", "maps": True},
        content_type="application/json",
        **a_viewer,
    ).json()["plans"][0]
    assert planned["victims"] and all(v["name"] is None and v["otherNamespace"] for v in planned["victims"])
    assert planned["map"] and "batch" not in str(planned)


def test_bad_input_is_a_problem_naming_the_field(client, admin, monkeypatch):
    bad = client.post("/api/v1/simulate/podgroups/", {"snapshot": upload(b"{: nope")}, **admin)
    assert list(problem(bad, 400)["errors"]) == ["snapshot"]
    node_only = {"kind": "List", "items": [{"kind": "Node"}]}
    malformed = client.post(
        "/api/v1/simulate/podgroups/", {"snapshot": node_only}, content_type="application/json", **admin
    )
    assert list(problem(malformed, 400)["errors"]) == ["snapshot"]
    not_a_list = client.post(
        "/api/v1/simulate/podgroups/", {"snapshot": "nodes"}, content_type="application/json", **admin
    )
    assert list(problem(not_a_list, 400)["errors"]) == ["snapshot"]
    # A pod whose PodGroup name is no gang key's NAME (the engine reads it; the map cannot key its gang).
    slashed = {"kind": "Pod", "metadata": {"namespace": "a", "name": "p", "uid": "p"}}
    slashed["spec"] = {"schedulingGroup": {"podGroupName": "x/y"}, "containers": [{"name": "c"}]}
    odd = client.post(
        "/api/v1/simulate/podgroups/", {"snapshot": [slashed]}, content_type="application/json", **admin
    )
    assert "a/x/y" in problem(odd, 400)["errors"]["snapshot"][0]
    maps = client.post(
        "/api/v1/simulate/",
        {"podGroup": "a/b", "maps": "sometimes"},
        content_type="application/json",
        **admin,
    )
    assert list(problem(maps, 400)["errors"]) == ["maps"]
    monkeypatch.setenv("GANGWEB_SNAPSHOT_MAX_BYTES", "100")
    big = {"snapshot": {"kind": "List", "items": world_objects()}}
    problem(client.post("/api/v1/simulate/podgroups/", big, content_type="application/json", **admin), 413)


def test_anonymous_callers_are_refused_even_in_the_demo(client, settings, world):
    settings.DEMO = True
    refused = client.post("/api/v1/simulate/podgroups/", {}, content_type="application/json")
    assert problem(refused, 401) and "Bearer" in refused["WWW-Authenticate"]


def test_a_session_post_needs_its_csrf_token(world, django_user_model):
    token_reader("lab-viewer", "viewer", "--namespaces", "team-a")
    user = django_user_model.objects.get(username="lab-viewer")
    user.set_password("pw-lab-31")
    user.save()
    browser = Client(enforce_csrf_checks=True)
    assert browser.login(username="lab-viewer", password="pw-lab-31")
    refused = browser.post("/api/v1/simulate/podgroups/", {}, content_type="application/json")
    assert "CSRF" in problem(refused, 403)["detail"]
    token = "b" * 32
    browser.cookies["csrftoken"] = token
    answer = browser.post(
        "/api/v1/simulate/podgroups/", {}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert answer.status_code == 200, answer.content
    assert [g["podGroup"] for g in answer.json()["podGroups"]] == ["team-a/train"]


def test_listing_and_planning_share_one_throttle_per_user(client, admin, world, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    from gangweb.api.v1 import throttling

    throttling.clear()
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"simulate": "2/min"})
    listed = client.post("/api/v1/simulate/podgroups/", {}, content_type="application/json", **admin)
    planned = client.post(
        "/api/v1/simulate/", {"podGroup": "team-a/train"}, content_type="application/json", **admin
    )
    third = client.post("/api/v1/simulate/podgroups/", {}, content_type="application/json", **admin)
    assert (listed.status_code, planned.status_code) == (200, 200)
    problem(third, 429)
    throttling.clear()


def test_json_nested_too_deeply_is_a_400_not_a_crash(client, admin, world):
    deep = '{"podGroup": "team-a/train", "snapshot": ' + "[" * 10_000 + "]" * 10_000 + "}"
    for path in ("/api/v1/simulate/", "/api/v1/simulate/podgroups/", "/api/plan/"):
        refused = client.post(path, deep, content_type="application/json", **admin)
        assert "nests too deeply" in problem(refused, 400)["detail"], path


def test_a_json_body_larger_than_django_reads_in_memory_is_read_by_the_worker(client, admin, settings):
    """A dump of 6,000 nodes inline (8 MiB, past DATA_UPLOAD_MAX_MEMORY_SIZE): listed and planned."""
    dump = {"kind": "List", "items": synthetic_cluster(6_000)}
    listed = client.post(
        "/api/v1/simulate/podgroups/", {"snapshot": dump}, content_type="application/json", **admin
    )
    assert int(listed.request["CONTENT_LENGTH"]) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert listed.status_code == 200, listed.content
    body = listed.json()
    waiting = [g["podGroup"] for g in body["podGroups"] if g["state"] == "waiting"]
    assert body["source"] == "snapshot" and waiting
    planned = client.post(
        "/api/v1/simulate/",
        {"podGroup": waiting[0], "policies": ["gangweb"], "snapshot": dump},
        content_type="application/json",
        **admin,
    )
    assert planned.status_code == 200, planned.content
    assert planned.json()["source"] == "snapshot" and planned.json()["plans"][0]["podGroup"] == waiting[0]
    # Its fields are checked as a small body's are, before anything is planned.
    bad = client.post(
        "/api/v1/simulate/",
        {"podGroup": "no-slash", "snapshot": dump},
        content_type="application/json",
        **admin,
    )
    assert list(problem(bad, 400)["errors"]) == ["podGroup"]
    # Where no worker reads it, a JSON body past Django's cap is refused as too large, not a crash.
    old = {"podGroup": waiting[0], "padding": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE}
    problem(client.post("/api/plan/", old, content_type="application/json", **admin), 413)
