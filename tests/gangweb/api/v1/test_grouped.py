"""The grouped answers the /preemptions/ and /decisions/ pages draw: preemption cards with retries folded,
the GPU-hours lost per hour, admission decisions grouped and counted; each cut to its reader's scope,
every parameter checked."""

from __future__ import annotations

import pytest
from django.utils import timezone

from gangweb.api.v1 import store
from scheduler.preemption.models import Plan, PreemptionRequest, RequestState
from tests.gangweb.api.v1.conftest import HIDDEN, token_reader
from tests.gangweb.api.v1.test_contract import problem

pytestmark = pytest.mark.django_db(transaction=True)


def infeasible(namespace: str, name: str, count: int) -> None:
    for i in range(count):
        request = PreemptionRequest.objects.create(
            namespace=namespace,
            name=name,
            state=RequestState.INFEASIBLE,
            reason=f"short ({20 + i} victims)",
            finished_at=timezone.now(),
        )
        Plan.objects.create(
            request=request, policy="gangweb", outcome="infeasible:short", reason=request.reason
        )


def test_one_card_per_gang_retries_folded_executions_first(client, world, admin, a_viewer):
    infeasible("team-b", "big", 7)
    body = client.get("/api/v1/preemptions/", **admin).json()
    assert set(body) == {"count", "next", "previous", "results"}
    cards = {c["podGroup"]: c for c in body["results"]}
    assert body["results"][0]["podGroup"] == "team-a/train", "the executed preemption comes first"
    executed = cards["team-a/train"]
    assert (executed["namespace"], executed["name"], executed["executed"]) == ("team-a", "train", 1)
    assert executed["retryAt"] is None, "a gang placed is not retried"
    plan = executed["runs"][0]["plan"]
    assert plan["evictedPods"] == world.plans["team-a"].evicted_pods
    assert " 1 pods" not in plan["summary"] and " 1 units" not in plan["summary"]
    # whether the exact search proved the plan cheapest: the preemptions page's mark
    assert plan["optimality"] and plan["optimality"] == world.plans["team-a"].optimality
    [run] = cards["team-b/big"]["runs"]
    assert (run["state"], run["count"]) == ("infeasible", 7) and run["reason"].endswith("(26 victims)")
    # the verdict's retry time, as /api/v1/podgroups/ says it
    assert cards["team-b/big"]["retryAt"] is not None
    mine = client.get("/api/v1/preemptions/", **a_viewer).json()["results"]
    assert [c["podGroup"] for c in mine] == ["team-a/train"]


@pytest.mark.parametrize(
    "query, expected",
    [
        ("state=succeeded", ["team-a/train"]),
        ("state=infeasible,failed", ["team-b/big", "team-b/train"]),
        ("gang=BI", ["team-b/big"]),
        ("namespace=team-b", ["team-b/big", "team-b/train"]),
        ("namespace=team-a,team-c&gang=tra", ["team-a/train"]),
    ],
)
def test_the_pages_filters_are_parameters(client, world, admin, query, expected):
    infeasible("team-b", "big", 2)
    found = client.get(f"/api/v1/preemptions/?{query}", **admin).json()["results"]
    assert sorted(c["podGroup"] for c in found) == expected


@pytest.mark.parametrize(
    "path, parameter",
    [
        ("/api/v1/preemptions/?state=done", "state"),
        ("/api/v1/preemptions/?gang=a&gang=b", "gang"),
        ("/api/v1/preemptions/?key=team-a/train", "key"),
        ("/api/v1/preemptions/lost-gpu-hours/?days=0", "days"),
        ("/api/v1/preemptions/lost-gpu-hours/?days=abc", "days"),
        ("/api/v1/preemptions/lost-gpu-hours/?hours=5", "hours"),
        ("/api/v1/decisions/groups/?allowed=maybe", "allowed"),
        ("/api/v1/decisions/groups/?podgroup=train", "podgroup"),
        ("/api/v1/decisions/summary/?webhook=mutate", "webhook"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(client, admin, path, parameter):
    assert list(problem(client.get(path, **admin), 400)["errors"]) == [parameter]


def test_lost_gpu_hours_are_the_readers_own(client, make_request, admin):
    team_a = make_request("team-a")
    team_b = make_request("team-b")
    assert team_a.request.state == team_b.request.state == "succeeded"
    b_viewer = token_reader("viewer-b", "viewer", "--namespaces", "team-b")
    nobody = token_reader("viewer-c", "viewer", "--namespaces", "team-c")

    def lost(reader):
        body = client.get("/api/v1/preemptions/lost-gpu-hours/", **reader).json()
        assert body["days"] == 2 and all(set(p) == {"at", "lostGpuHours"} for p in body["points"])
        return body["totalGpuHours"]

    one = round(team_b.plan.lost_gpu_seconds / 3600, 2)
    assert one > 0
    assert lost(b_viewer) == one
    assert lost(admin) == round(one + team_a.plan.lost_gpu_seconds / 3600, 2)
    assert lost(nobody) == 0


def decision(namespace: str, pod: str, *, allowed=True, gang="train", message="", source="job") -> dict:
    return {
        "uid": f"uid-{namespace}-{pod}",
        "webhook": "mutate" if allowed else "validate",
        "kind": "Pod",
        "namespace": namespace,
        "name": pod,
        "operation": "CREATE",
        "dryRun": False,
        "allowed": allowed,
        "message": message,
        "warnings": [],
        "podGroup": gang,
        "source": source,
        "minCount": 2,
        "mode": "enforce",
    }


def test_decisions_are_grouped_denials_first_and_counted_by_source(client, admin, a_viewer, published):
    # what the webhook's recorder hands gangweb, oldest first; kept with the time they were kept
    store.keep_and_send(
        "admission.decisions",
        {
            "decisions": [
                *(decision("team-a", f"train-{i}") for i in range(7)),
                decision("team-a", "bad-0", allowed=False, gang="big", message="minCount 9 > 4 pods"),
                decision("team-a", "bad-1", allowed=False, gang="big", message="minCount 9 > 4 pods"),
                decision("team-b", "hidden-b-0", gang="hidden-b", source="lws"),
            ]
        },
    )
    groups = client.get("/api/v1/decisions/groups/", **admin).json()
    assert set(groups) == {"count", "next", "previous", "results"} and groups["count"] == 3
    denied, allowed = groups["results"][0], next(g for g in groups["results"] if g["name"] == "train")
    assert (denied["outcome"], denied["reason"], denied["count"]) == ("denied", "minCount 9 > 4 pods", 2)
    assert (denied["namespace"], denied["name"], denied["podGroup"]) == ("team-a", "big", "team-a/big")
    assert allowed["count"] == 7 and len(allowed["pods"]) == 5 and allowed["reason"] == ""
    assert allowed["latest"], "stamped when kept"
    summary = client.get("/api/v1/decisions/summary/", **admin).json()
    assert summary == {
        "decisions": 10,
        "denied": 2,
        "bySource": [{"source": "job", "count": 9}, {"source": "lws", "count": 1}],
    }
    # team-a's reader: its own groups and its own counts; team-b's source is not counted
    mine = client.get("/api/v1/decisions/groups/", **a_viewer)
    assert mine.json()["count"] == 2 and not any(word in mine.content.decode() for word in HIDDEN)
    assert client.get("/api/v1/decisions/summary/", **a_viewer).json() == {
        "decisions": 9,
        "denied": 2,
        "bySource": [{"source": "job", "count": 9}],
    }
    only = client.get("/api/v1/decisions/groups/?allowed=false", **admin).json()["results"]
    assert [g["outcome"] for g in only] == ["denied"]
    assert store.DECISIONS.newest(1)[0]["at"]
