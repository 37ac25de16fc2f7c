"""The v1 contract a caller sees: pages, validated parameters, one error shape, the deprecated paths,
the cluster's rows, simulate, and the operator actions."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from scheduler.engine import parse_snapshot, plan
from scheduler.preemption import planning
from scheduler.preemption.models import LedgerEntry, PreemptionRequest
from tests.gangweb.api.v1.conftest import world_objects
from tests.gangweb.api.v1.test_isolation import ROUTES

pytestmark = pytest.mark.django_db(transaction=True)

LISTS = [
    name
    for params, name, cb in ROUTES
    if not params
    and name.endswith(("-list", "s", "pending"))
    and name not in ("usage",)
    and ("get" in cb.actions if getattr(cb, "actions", None) else hasattr(cb.cls, "get"))
]
PROBLEM_KEYS = {"type", "title", "status", "detail", "instance"}


def problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert set(body) >= PROBLEM_KEYS and body["status"] == status
    return body


@pytest.mark.parametrize("name", LISTS)
@pytest.mark.parametrize(
    "query, parameter",
    [
        ("limit=abc", "limit"),
        ("offset=-1", "offset"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("nope=1", "nope"),
    ],
)
def test_every_list_validates_its_page_and_refuses_unknown_parameters(client, admin, name, query, parameter):
    body = problem(client.get(f"{reverse(f'api:v1:{name}')}?{query}", **admin), 400)
    assert list(body["errors"]) == [parameter] and parameter in body["detail"]


@pytest.mark.parametrize("name", LISTS)
def test_every_list_is_a_page(client, admin, world, name):
    body = client.get(f"{reverse(f'api:v1:{name}')}?limit=1", **admin).json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert len(body["results"]) == min(1, body["count"])
    if body["count"] > 1:
        assert "offset=1" in body["next"]
        second = client.get(body["next"], **admin).json()
        assert second["results"] != body["results"] and "offset" not in (second["previous"] or "offset=")


@pytest.mark.parametrize(
    "path, parameter",
    [
        ("/api/v1/ledger/?kind=nope", "kind"),
        ("/api/v1/requests/?state=done", "state"),
        ("/api/v1/plans/?outcome=maybe", "outcome"),
        ("/api/v1/podgroups/?state=sleeping", "state"),
        ("/api/v1/evictions/?pod=low-0", "pod"),
        ("/api/v1/evictions/?unit=low", "unit"),
        ("/api/v1/usage/?points=999", "points"),
        ("/api/v1/nodes/?cordoned=yes", "cordoned"),
    ],
)
def test_a_filter_that_cannot_match_is_a_400_not_an_empty_list(client, admin, path, parameter):
    assert list(problem(client.get(path, **admin), 400)["errors"]) == [parameter]


def test_evictions_of_one_victim_unit_whatever_its_kind(client, admin, world):
    """A gang's history as a victim (the page of a PodGroup deleted since, or of a lone GPU pod)."""
    every = client.get("/api/v1/evictions/?limit=1000", **admin).json()["results"]
    units = {e["victimUnit"] for e in every}
    assert units == {"PodGroup batch/low"}, units
    for unit in units:
        key = unit.partition(" ")[2]
        rows = client.get(f"/api/v1/evictions/?unit={key}&limit=1000", **admin).json()["results"]
        assert rows and {r["victimUnit"] for r in rows} == {unit}
        assert len(rows) == sum(1 for e in every if e["victimUnit"] == unit)
    # a gang that was no victim (batch/mid: its pods are named like low's), and one the cluster never had
    for other in ("batch/mid", "batch/no-such-gang", "batch/low-0"):
        assert client.get(f"/api/v1/evictions/?unit={other}", **admin).json()["count"] == 0, other


def test_a_known_kind_filters_and_new_kinds_are_known_once_written(client, admin, world):
    rows = client.get("/api/v1/ledger/?kind=plan.created", **admin).json()["results"]
    assert rows and {r["kind"] for r in rows} == {"plan.created"}
    # approve mode's decisions are known before the first one is written: none yet is an empty list
    for kind in ("request.approved", "request.approval_refused", "request.cancelled", "request.expired"):
        assert client.get(f"/api/v1/ledger/?kind={kind}", **admin).json()["count"] == 0, kind
    LedgerEntry.objects.create(kind="request.approved", message="x", namespace="team-a", name="train")
    assert client.get("/api/v1/ledger/?kind=request.approved", **admin).json()["count"] == 1


def test_without_credentials_401_offers_bearer_and_basic(client):
    for path in ("/api/v1/podgroups/", "/api/v1/requests/", "/api/requests/"):
        response = client.get(path)
        problem(response, 401)
        assert response["WWW-Authenticate"] == 'Bearer realm="gangweb", Basic realm="gangweb"'
    bad = client.get("/api/v1/nodes/", HTTP_AUTHORIZATION="Basic " + "b3BzOndyb25n")
    problem(bad, 401)
    assert "Bearer" in bad["WWW-Authenticate"]


def test_a_signed_in_user_without_any_role_is_403(client, django_user_model):
    django_user_model.objects.create_user("nobody", password="pw-nobody-1")
    client.login(username="nobody", password="pw-nobody-1")
    assert "no role" in problem(client.get("/api/v1/nodes/"), 403)["detail"]


def test_unknown_paths_and_methods_under_api_are_problems_too(client, admin):
    problem(client.get("/api/v1/nothing-here/", **admin), 404)
    problem(client.get("/api/v1/requests/999999/", **admin), 404)
    problem(client.delete("/api/v1/requests/", **admin), 405)
    problem(client.post("/api/v1/simulate/", "{not json", content_type="application/json", **admin), 400)


@pytest.mark.parametrize(
    "old, new",
    [
        ("/api/requests/", "/api/v1/requests/"),
        ("/api/plans/", "/api/v1/plans/"),
        ("/api/evictions/", "/api/v1/evictions/"),
        ("/api/ledger/", "/api/v1/ledger/"),
        ("/api/", "/api/v1/"),
    ],
)
def test_the_first_apis_paths_still_answer_and_say_they_are_deprecated(client, admin, world, old, new):
    response = client.get(old, **admin)
    assert response.status_code == 200
    assert response["Deprecation"] == "@1796083200"  # 2026-12-01T00:00:00Z, RFC 9745
    assert response["Link"].startswith(f'<{new}>; rel="successor-version"')
    assert response.json() == client.get(new, **admin).json()
    assert "Deprecation" not in client.get(new, **admin)


def test_a_deprecated_detail_links_its_own_successor(client, admin, world):
    pk = world.requests["team-a"].pk
    response = client.get(f"/api/requests/{pk}/", **admin)
    assert response["Link"].startswith(f'</api/v1/requests/{pk}/>; rel="successor-version"')
    assert response.json()["url"].endswith(f"/api/v1/requests/{pk}/")


def test_nodes_say_who_holds_the_gpus_and_hide_other_namespaces(client, admin, world, a_viewer):
    rows = {r["name"]: r for r in client.get("/api/v1/nodes/", **admin).json()["results"]}
    assert rows["node-4"]["allocations"] == [
        {"namespace": "team-b", "name": "hidden-b", "gpus": 8, "otherNamespace": False}
    ]
    seen = {r["name"]: r for r in client.get("/api/v1/nodes/", **a_viewer).json()["results"]}
    assert seen["node-4"]["allocations"] == [
        {"namespace": None, "name": None, "gpus": 8, "otherNamespace": True}
    ]
    assert seen["node-4"]["allocatedGpus"] == 8 and seen["node-4"]["freeGpus"] == 0
    assert not seen["node-4"]["cordoned"] and seen["node-4"]["gpus"] == 8


def test_podgroups_carry_state_reason_and_gangwebs_verdict(client, admin, world, a_viewer):
    body = client.get("/api/v1/podgroups/?namespace=team-a", **a_viewer).json()
    [train] = body["results"]
    assert (train["namespace"], train["name"], train["state"]) == ("team-a", "train", "pending")
    assert train["minCount"] == 2 and train["placedPods"] == 0 and train["priority"] == 100
    # The map's words (gangweb/clusterview/reasons.py): the world's 40 GPUs are all held.
    assert train["disruptionMode"] == "all"
    assert train["reason"] == "needs 2 \u00d7 8 GPUs; only 0 GPUs free in the cluster"
    verdict = train["verdict"]
    assert verdict["request"] == world.requests["team-a"].pk and verdict["state"] == "succeeded"
    assert verdict["outcome"] == "preempt" and verdict["retryAt"]


def test_a_podgroups_page_has_members_decisions_and_history(client, world, a_viewer):
    body = client.get("/api/v1/podgroups/team-a/train/", **a_viewer).json()
    assert [m["name"] for m in body["members"]] == ["train-0", "train-1"]
    assert {c["type"] for c in body["conditions"]} >= {"PodGroupInitiallyScheduled", "PodScheduled"}
    assert [d["uid"] for d in body["decisions"]] == ["uid-team-a"]
    assert [r["id"] for r in body["asPreemptor"]] == [world.requests["team-a"].pk]
    assert body["asVictim"] == []


def test_pending_lists_waiting_gangs_in_serving_order(client, admin, world, a_viewer):
    """team-b/waiting-b never had a request: the next detection pass opens one. team-a/train's request
    just finished, so it waits for the pause between two requests (``ledger.retry_at``)."""
    rows = client.get("/api/v1/pending/", **admin).json()["results"]
    assert [(r["namespace"], r["name"], r["stage"]) for r in rows] == [
        ("team-b", "waiting-b", "next"),
        ("team-a", "train", "later"),
    ]
    assert [r["position"] for r in rows] == [1, 2] and rows[1]["servedAt"] and rows[0]["servedAt"] is None
    mine = client.get("/api/v1/pending/", **a_viewer).json()["results"]
    assert [(r["name"], r["position"], r["priority"]) for r in mine] == [("train", 2, 100)]


def test_usage_is_by_namespace_and_tier_with_others_added_up(client, admin, world, a_viewer):
    body = client.get("/api/v1/usage/", **a_viewer).json()
    assert body["totalGpus"] == 40 and body["allocatedGpus"] == 40
    mine = [r for r in body["rows"] if not r["otherNamespace"]]
    assert [(r["namespace"], r["gpus"], r["waitingGpus"]) for r in mine] == [("team-a", 0, 16)]
    assert sum(r["gpus"] for r in body["rows"]) == 40
    assert len(body["history"]) == 1 and body["history"][0]["rows"] == body["rows"]


def test_simulate_plans_side_by_side_and_records_nothing(client, world, a_viewer):
    before = (PreemptionRequest.objects.count(), LedgerEntry.objects.count(), list(world.cluster.calls))
    body = {"podGroup": "team-a/train", "policies": ["gangweb", "kep5710", "legacy"]}
    answer = client.post("/api/v1/simulate/", body, content_type="application/json", **a_viewer).json()
    assert answer["source"] == "cluster" and [p["policy"] for p in answer["plans"]] == body["policies"]
    snapshot = parse_snapshot(world_objects())
    for row in answer["plans"]:
        expected = planning.result_of(snapshot, plan(snapshot, "team-a/train", row["policy"])).json_cost
        assert (row["cost"] == expected and row["outcome"] in ("fits", "preempt")) or row[
            "outcome"
        ].startswith("infeasible:")
        # Whether the plan is proven the cheapest, as the engine says (docs/design.md "gang plan").
        assert row["optimality"] == plan(snapshot, "team-a/train", row["policy"]).optimality
    assert (
        PreemptionRequest.objects.count(),
        LedgerEntry.objects.count(),
        list(world.cluster.calls),
    ) == before


def test_simulate_on_an_uploaded_snapshot(client, admin, tmp_path):
    document = {"apiVersion": "v1", "kind": "List", "items": world_objects()}
    inline = client.post(
        "/api/v1/simulate/",
        {"podGroup": "team-a/train", "snapshot": document},
        content_type="application/json",
        **admin,
    ).json()
    assert inline["source"] == "snapshot" and inline["plans"][0]["outcome"] == "preempt"
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(document))
    with path.open("rb") as upload:
        multipart = client.post(
            "/api/v1/simulate/",
            {"podGroup": "team-a/train", "policies": "gangweb,kep5710", "snapshot": upload},
            **admin,
        )
    assert multipart.status_code == 200, multipart.content
    assert [p["policy"] for p in multipart.json()["plans"]] == ["gangweb", "kep5710"]
    assert multipart.json()["plans"][0] == inline["plans"][0] | {
        "planningSeconds": multipart.json()["plans"][0]["planningSeconds"]
    }


def test_simulate_refuses_bad_input_by_name(client, admin, monkeypatch):
    def ask(body):
        return client.post("/api/v1/simulate/", body, content_type="application/json", **admin)

    assert list(problem(ask({"podGroup": "train"}), 400)["errors"]) == ["podGroup"]
    assert list(problem(ask({"podGroup": "a/b", "policies": ["best"]}), 400)["errors"]) == ["policies"]
    assert list(
        problem(ask({"podGroup": "a/b", "snapshot": {"kind": "List", "items": [{"kind": "Node"}]}}), 400)[
            "errors"
        ]
    ) == ["snapshot"]
    monkeypatch.setenv("GANGWEB_SNAPSHOT_MAX_BYTES", "100")
    problem(ask({"podGroup": "team-a/train", "snapshot": {"kind": "List", "items": world_objects()}}), 413)


def test_simulate_is_throttled_per_user(client, admin, world, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    from gangweb.api.v1 import throttling

    throttling.clear()
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"simulate": "2/min"})
    codes = [
        client.post(
            "/api/v1/simulate/", {"podGroup": "team-a/train"}, content_type="application/json", **admin
        ).status_code
        for _ in range(3)
    ]
    assert codes == [200, 200, 429]
    throttling.clear()


def test_gang_plan_prints_the_same_cost_block_as_the_api(client, admin, world, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"kind": "List", "items": world_objects()}))
    out = StringIO()
    call_command("gang", "plan", "--snapshot", str(path), "--podgroup", "team-a/train", stdout=out)
    cli = json.loads(out.getvalue())
    api = client.post(
        "/api/v1/simulate/", {"podGroup": "team-a/train"}, content_type="application/json", **admin
    ).json()
    assert cli["cost"] == api["plans"][0]["cost"] and cli["cost"]["evictedGpus"] == 16


def test_actions_map_the_pipelines_answers_onto_http(client, world, a_viewer, a_operator):
    """scheduler/preemption/actions.py decides; the view answers 403 for a viewer, 404 for another tenant's
    request, 409 for a request not awaiting approval (these were made in enforce mode)."""
    pk = world.requests["team-a"].pk
    problem(client.post(f"/api/v1/requests/{pk}/approve/", **a_viewer), 403)
    body = problem(client.post(f"/api/v1/requests/{pk}/approve/", **a_operator), 409)
    assert "awaiting approval" in body["detail"]
    problem(client.post(f"/api/v1/requests/{world.requests['team-b'].pk}/reject/", **a_operator), 404)


def test_a_session_post_needs_its_csrf_token(world, django_user_model):
    from django.test import Client

    django_user_model.objects.create_superuser("session-ops", password="pw-session-1")
    browser = Client(enforce_csrf_checks=True)
    browser.login(username="session-ops", password="pw-session-1")
    body = {"podGroup": "team-a/train"}
    assert (
        "CSRF"
        in problem(browser.post("/api/v1/simulate/", body, content_type="application/json"), 403)["detail"]
    )
    # What a page of the dashboard holds: the token in the cookie, sent back in X-CSRFToken.
    token = "a" * 32
    browser.cookies["csrftoken"] = token
    answer = browser.post("/api/v1/simulate/", body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert answer.status_code == 200, answer.content


def test_the_schema_and_its_docs_need_a_sign_in_outside_the_demo(client, admin, a_viewer):
    for path in ("/api/schema/", "/api/docs/", "/api/redoc/"):
        anonymous = client.get(path)
        assert anonymous.status_code == 401, (path, anonymous.status_code)
        assert anonymous["Content-Type"].startswith("application/problem+json"), path
        assert client.get(path, **a_viewer).status_code == 200, path
        assert client.get(path, **admin).status_code == 200, path


def test_the_schema_and_its_docs_are_open_where_the_dashboard_is(client, settings):
    settings.DEMO = True
    for path in ("/api/schema/", "/api/docs/", "/api/redoc/"):
        assert client.get(path).status_code == 200, path
