"""The read-only ledger endpoints, on rows the real pipeline wrote."""

from __future__ import annotations

import pytest

from scheduler.preemption import ledger
from scheduler.preemption.models import EvictionState, LedgerEntry, RequestState

pytestmark = pytest.mark.django_db(transaction=True)

GANG_PLAN_KEYS = [
    "podGroup",
    "policy",
    "feasible",
    "victims",
    "evictions",
    "placement",
    "domain",
    "reason",
    "outcome",
    "optimality",
]


@pytest.fixture
def api(client, reader, settings):
    settings.DEMO = False
    client.force_login(reader)
    return client


@pytest.fixture
def two_requests(make_request):
    """team-a/train executed (victims evicted), then team-b/train refused at the dry run."""
    done = make_request("team-a")
    refused = make_request("team-b", refuse=True)
    assert done.request.state == RequestState.SUCCEEDED, done.request.reason
    assert refused.request.state == RequestState.FAILED, refused.request.reason
    return done, refused


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_requests_newest_first_and_filtered(api, two_requests):
    done, refused = two_requests
    assert ids(api.get("/api/requests/")) == [refused.request.pk, done.request.pk]
    assert ids(api.get("/api/requests/?namespace=team-a")) == [done.request.pk]
    assert ids(api.get("/api/requests/?podgroup=team-b/train")) == [refused.request.pk]
    assert ids(api.get("/api/requests/?state=succeeded")) == [done.request.pk]
    assert ids(api.get("/api/requests/?state=failed,succeeded")) == [refused.request.pk, done.request.pk]
    assert ids(api.get("/api/requests/?namespace=team-c")) == []

    row = api.get("/api/requests/?namespace=team-b").json()["results"][0]
    assert row["podGroup"] == "team-b/train" and row["state"] == "failed" and row["mode"] == "enforce"
    assert "429" in row["reason"] and row["trigger"] == "test: pending for 45s"
    assert row["finishedAt"] and row["url"].endswith(f"/api/v1/requests/{refused.request.pk}/")


@pytest.mark.parametrize(
    "query, says",
    [
        ("state=done", "unknown value 'done'; choose from: pending, planning"),
        ("podgroup=train", "'train' is not NAMESPACE/NAME"),
        ("mode=both", "unknown value 'both'"),
    ],
)
def test_a_filter_that_cannot_match_is_a_400_naming_it(api, query, says):
    response = api.get(f"/api/requests/?{query}")
    assert response.status_code == 400
    name = query.split("=")[0]
    assert says in response.json()["errors"][name][0]


def test_a_request_carries_its_plans_and_their_evictions(api, two_requests):
    done, _ = two_requests
    body = api.get(f"/api/requests/{done.request.pk}/").json()
    assert body["state"] == "succeeded" and body["executionStartedAt"] and body["plannedAt"]
    [plan] = body["plans"]
    # The stored plan reads exactly as the engine answered it (the docs/design.md "gang plan" JSON).
    assert {key: plan[key] for key in GANG_PLAN_KEYS} == done.engine_plan
    victims = sorted(done.engine_plan["evictions"])
    assert victims, "the scenario must need preemption"
    rows = plan["podEvictions"]
    assert sorted(row["pod"] for row in rows) == victims
    for row in rows:
        assert row["state"] == "evicted" and row["attempts"] == 1 and row["apiCode"] in (200, 201)
        assert row["dryRunCode"] in (200, 201) and row["gpus"] == 8 and row["node"].startswith("node-")
        assert row["victimUnit"].startswith(("PodGroup batch/", "Pod batch/"))
        assert row["request"] == done.request.pk and row["plan"] == plan["id"]


def test_a_plan_is_the_gang_plan_json_plus_its_cost(api, two_requests):
    done, _ = two_requests
    body = api.get(f"/api/plans/{done.plan.pk}/").json()
    assert {key: body[key] for key in GANG_PLAN_KEYS} == done.engine_plan
    assert body["source"] == "engine" and body["request"] == done.request.pk
    cost = body["cost"]
    assert cost["victimUnits"] == len(done.engine_plan["victims"]) == done.cost["victim_units"]
    assert cost["evictedPods"] == len(done.engine_plan["evictions"])
    assert cost["evictedGpus"] == 8 * len(done.engine_plan["evictions"])
    assert cost["maxVictimPriority"] == max(v["priority"] for v in done.engine_plan["victims"])
    assert cost["victimPrioritySum"] == sum(v["priority"] for v in done.engine_plan["victims"])
    assert cost["lostGpuSeconds"] == done.cost["lost_gpu_seconds"] > 0  # victims ran an hour
    assert cost["pdbViolations"] == 0
    assert len(body["podEvictions"]) == len(done.engine_plan["evictions"])
    assert api.get("/api/plans/999999/").status_code == 404


def test_evictions_filtered_by_state_and_pod(api, two_requests):
    done, refused = two_requests
    evicted = api.get("/api/evictions/?state=evicted").json()
    assert evicted["count"] == len(done.engine_plan["evictions"])
    assert {row["request"] for row in evicted["results"]} == {done.request.pk}

    refused_pod = sorted(refused.engine_plan["evictions"])[-1]
    [row] = api.get("/api/evictions/?state=dry_run_refused").json()["results"]
    assert (
        row["pod"] == refused_pod and row["dryRunCode"] == 429 and "disruption budget" in row["dryRunMessage"]
    )
    # Nothing of the refused plan was evicted: its other pods were marked failed before any real call.
    others = api.get(f"/api/evictions/?request={refused.request.pk}&state=failed").json()["results"]
    assert sorted(r["pod"] for r in others) == sorted(set(refused.engine_plan["evictions"]) - {refused_pod})

    pod = sorted(done.engine_plan["evictions"])[0]
    by_pod = api.get(f"/api/evictions/?pod={pod}").json()["results"]
    # The same victim pod key appears in both scenarios (each cluster has its own batch/low-0).
    assert {r["pod"] for r in by_pod} == {pod} and done.request.pk in {r["request"] for r in by_pod}
    assert api.get("/api/evictions/?pod=low-0").status_code == 400
    assert api.get("/api/evictions/?state=gone").status_code == 400


def test_ledger_is_newest_first_and_since_gives_only_what_came_after(api, two_requests):
    done, refused = two_requests
    everything = api.get("/api/ledger/?limit=1000").json()
    entries = everything["results"]
    assert everything["count"] == LedgerEntry.objects.count() == len(entries)
    assert [e["id"] for e in entries] == sorted((e["id"] for e in entries), reverse=True)
    kinds = {e["kind"] for e in entries if e["request"] == done.request.pk}
    assert {
        "request.opened",
        "request.planning",
        "plan.created",
        "request.executing",
        "eviction.dry_run",
        "eviction.result",
        "request.succeeded",
    } <= kinds
    plan_created = next(e for e in entries if e["kind"] == "plan.created" and e["request"] == done.request.pk)
    assert plan_created["data"]["plan"] == done.engine_plan and plan_created["podGroup"] == "team-a/train"

    newest = entries[0]["id"]
    assert ids(api.get(f"/api/ledger/?since={newest}")) == []
    # A poller that saw everything up to `newest` gets exactly the entries written afterwards.
    later, _ = ledger.open_request("team-c", "train", mode="observe", trigger="poll test")
    after = api.get(f"/api/ledger/?since={newest}").json()["results"]
    assert [(e["kind"], e["request"]) for e in after] == [("request.opened", later.pk)]
    middle = entries[len(entries) // 2]["id"]
    assert ids(api.get(f"/api/ledger/?since={middle}&limit=1000")) == [after[0]["id"]] + [
        e["id"] for e in entries if e["id"] > middle
    ]
    assert set(ids(api.get(f"/api/ledger/?request={refused.request.pk}&limit=1000"))) == set(
        LedgerEntry.objects.filter(request=refused.request).values_list("id", flat=True)
    )
    assert api.get("/api/ledger/?since=yesterday").json()["errors"] == {"since": ["must be a whole number"]}


def test_the_ledger_endpoints_are_read_only(api, two_requests):
    done, _ = two_requests
    assert api.post("/api/requests/", {"namespace": "x"}).status_code == 405
    assert api.delete(f"/api/requests/{done.request.pk}/").status_code == 405
    assert (
        api.patch(
            f"/api/evictions/{done.plan.pod_evictions.first().pk}/",
            {"state": "planned"},
            content_type="application/json",
        ).status_code
        == 405
    )
    assert done.plan.pod_evictions.filter(state=EvictionState.EVICTED).count() == len(
        done.engine_plan["evictions"]
    )


def test_pages_are_capped_at_a_thousand_rows(api, two_requests):
    total = LedgerEntry.objects.count()
    first = api.get("/api/ledger/?limit=2").json()
    assert first["count"] == total and len(first["results"]) == 2 and "offset=2" in first["next"]
    # A limit past the cap is a 400 naming it (v1), not a silently smaller page.
    too_many = api.get("/api/ledger/?limit=1000000&offset=1")
    assert too_many.status_code == 400 and list(too_many.json()["errors"]) == ["limit"]
    assert "limit=1000&" in api.get("/api/ledger/?limit=1000&offset=1").json()["previous"] + "&"


def test_the_api_root_lists_every_endpoint(api):
    body = api.get("/api/").json()
    assert {"request-list", "plan-list", "eviction-list", "ledger-list"} <= set(body)
