"""What the dashboard's pages draw, served by v1: the GPU map (``map/``), the overview's figures and chart
(``overview/``), and what the gang page adds to ``podgroups/{namespace}/{name}/``; each cut to the
reader's scope on the two-tenant world (team-a preempted the ``batch`` gangs, team-b's try failed)."""

from __future__ import annotations

import gzip
import json

import pytest

from gangweb import stream
from scheduler.preemption import runtime
from tests.gangweb.api.v1.conftest import HIDDEN, token_reader
from tests.gangweb.api.v1.test_contract import problem

pytestmark = pytest.mark.django_db(transaction=True)


def owners(body: dict, node: str) -> list[str | None]:
    [row] = [n for n in body["nodes"] if n["name"] == node]
    return [None if o is None else body["gangs"][o]["key"] for o in row["gpus"]]


def test_the_map_draws_other_teams_squares_as_in_use_without_names(client, world, admin, a_viewer):
    everything = client.get("/api/v1/map/", **admin).json()
    mine = client.get("/api/v1/map/", **a_viewer).json()
    assert set(owners(everything, "node-4")) >= {"team-b/hidden-b"}
    assert "~" in owners(mine, "node-4") and "team-b/hidden-b" not in owners(mine, "node-4")
    [other] = [g for g in mine["gangs"] if g["key"] == "~"]
    assert (other["namespace"], other["name"], other["otherNamespace"]) == (None, None, True)
    assert {g["namespace"] for g in mine["gangs"]} == {"team-a", None}
    for word in HIDDEN:
        assert word not in str(mine)
    # The same squares, the same GPUs in use; the waiting gangs are the reader's own.
    assert [n["name"] for n in mine["nodes"]] == [n["name"] for n in everything["nodes"]]
    assert mine["totals"]["allocatedGpus"] == everything["totals"]["allocatedGpus"] > 0
    assert mine["totals"]["waitingGangs"] < everything["totals"]["waitingGangs"]
    assert mine["seq"] == everything["seq"] == stream.log().last("map")


def test_the_map_reads_no_parameter(client, world, admin):
    assert problem(client.get("/api/v1/map/", {"colour": "tier"}, **admin), 400)["errors"]["colour"]


def test_the_overview_counts_the_readers_preemptions_and_history(client, world, admin, a_viewer):
    everything = client.get("/api/v1/overview/", **admin).json()
    mine = client.get("/api/v1/overview/", **a_viewer).json()
    executed = world.requests["team-a"]
    lost = round(world.plans["team-a"].lost_gpu_seconds / 3600, 1)
    assert executed.state == "succeeded" and world.requests["team-b"].state != "succeeded"
    for body in (everything, mine):
        assert body["lastHour"] == body["lastDay"] == {"preemptions": 1, "lostGpuHours": lost}
    b_viewer = token_reader("viewer-b", "viewer", "--namespaces", "team-b")
    assert client.get("/api/v1/overview/", **b_viewer).json()["lastDay"]["preemptions"] == 0
    [sample] = everything["history"]
    [own] = mine["history"]
    assert own["at"] == sample["at"] and own["idleGpus"] == sample["idleGpus"]
    assert own["allocatedGpus"] < sample["allocatedGpus"]
    assert everything["totals"] == client.get("/api/v1/map/", **admin).json()["totals"]


def test_the_overviews_parameters_are_validated(client, world, admin):
    assert client.get("/api/v1/overview/", {"points": 0}, **admin).json()["history"] == []
    assert "points" in problem(client.get("/api/v1/overview/", {"points": "abc"}, **admin), 400)["errors"]
    assert "points" in problem(client.get("/api/v1/overview/", {"points": -1}, **admin), 400)["errors"]


def test_plans_awaiting_approval_are_listed_for_their_namespace_only(
    client, world, admin, a_viewer, make_request
):
    waiting = make_request("team-b", mode="approve", execute_it=False).request
    runtime.set_cluster(world.cluster)
    listed = client.get("/api/v1/overview/", **admin).json()["awaitingApproval"]
    assert {"id": waiting.pk, "namespace": "team-b", "name": "train", "state": waiting.state} in listed
    assert client.get("/api/v1/overview/", **a_viewer).json()["awaitingApproval"] == []


def test_signed_out_visitors_of_the_public_demo_see_no_waiting_approvals(
    client, world, admin, make_request, settings, django_user_model
):
    settings.DEMO = True  # the dashboard and the API's reads are open to anonymous readers
    make_request("team-b", mode="approve", execute_it=False)
    runtime.set_cluster(world.cluster)
    assert len(client.get("/api/v1/overview/", **admin).json()["awaitingApproval"]) == 1
    assert client.get("/api/v1/overview/").json()["awaitingApproval"] == []
    page = client.get("/").content.decode()
    assert 'id="approvals"' in page and "1 waiting approval" not in page
    assert "0 waiting approvals" in page  # the header's link is rendered hidden, with no count to read
    client.force_login(django_user_model.objects.get(username="ops"))
    assert "1 waiting approval" in client.get("/").content.decode()


def victim(world) -> tuple[str, str]:
    unit = world.evictions["team-a"].victim_unit  # "PodGroup batch/<name>"
    namespace, name = unit.split(" ", 1)[1].split("/")
    return namespace, name


def test_a_gangs_victim_history_is_grouped_per_preemptor(client, world, admin):
    namespace, name = victim(world)
    body = client.get(f"/api/v1/podgroups/{namespace}/{name}/", **admin).json()
    by = {row["request"]: row for row in body["preemptedBy"]}
    executed = by[world.requests["team-a"].pk]
    assert (executed["namespace"], executed["name"], executed["state"]) == ("team-a", "train", "succeeded")
    mine = [e for e in body["asVictim"] if e["request"] == world.requests["team-a"].pk]
    assert executed["pods"] == len({e["pod"] for e in mine}) and executed["evictedPods"] >= 1
    assert executed["gpus"] == sum(e["gpus"] for e in mine)
    assert set(by) <= {e["request"] for e in body["asVictim"]}


def test_a_victim_team_reads_its_history_without_the_preemptors_names(client, world):
    namespace, name = victim(world)
    reader = token_reader("viewer-batch", "viewer", "--namespaces", namespace)
    body = client.get(f"/api/v1/podgroups/{namespace}/{name}/", **reader).json()
    assert body["preemptedBy"]
    for row in body["preemptedBy"]:
        assert (row["namespace"], row["name"], row["otherNamespace"]) == (None, None, True)
    assert "team-a" not in str(body) and "team-b" not in str(body)


def test_a_gang_is_shown_as_the_map_draws_it(client, world, admin):
    picture = client.get("/api/v1/map/", **admin).json()
    namespace, name = victim(world)
    held = client.get(f"/api/v1/podgroups/{namespace}/{name}/", **admin).json()
    [row] = [g for g in picture["gangs"] if g["key"] == f"{namespace}/{name}"]
    assert (held["tier"], held["shade"]) == (row["tier"], row["shade"])
    assert set(held["nodes"]) == {m["node"] for m in held["members"] if m["node"]} != set()
    waiting = client.get("/api/v1/podgroups/team-a/train/", **admin).json()
    assert waiting["nodes"] == [] and waiting["tier"] is not None
    assert "retryAt" in waiting["verdict"] and "nextRetry" not in waiting["verdict"]


def test_with_no_page_open_a_tool_reading_the_map_sees_the_cluster_move(client, world, admin):
    """The ticker keeps the picture fresh only in a process with a browser connected; a tool polling
    map/ in any other is answered from a reading no older than ``live.stale_after()``."""
    from gangweb.clusterview import reading
    from gangweb.dashboard import live

    before = client.get("/api/v1/map/", **admin).json()
    assert "team-b/hidden-b" in owners(before, "node-4")
    for key in [k for k in world.cluster.objects if k[0] == "Pod" and k[1].startswith("team-b/hidden-b")]:
        del world.cluster.objects[key]
    # Within the ticker's period the kept picture is served as it is ...
    assert owners(client.get("/api/v1/map/", **admin).json(), "node-4") == owners(before, "node-4")
    # ... and once older than that, read again, its change published like the ticker's.
    live._current["picture"]["time"] -= live.stale_after() + 1  # the kept picture and its reading, aged
    reading.forget()
    after = client.get("/api/v1/map/", **admin).json()
    assert "team-b/hidden-b" not in owners(after, "node-4")
    assert after["seq"] == stream.log().last("map") > before["seq"]


def test_the_map_is_gzipped_for_a_browser_that_accepts_it(client, world, admin, monkeypatch):
    from gangweb.dashboard import live

    monkeypatch.setattr(live, "stale_after", lambda: 3600.0)  # one picture for both answers, however slow
    plain = client.get("/api/v1/map/", **admin)
    assert "Content-Encoding" not in plain
    packed = client.get("/api/v1/map/", HTTP_ACCEPT_ENCODING="gzip, deflate, br", **admin)
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    body = json.loads(gzip.decompress(packed.content))
    assert body["nodes"] == plain.json()["nodes"] and body["seq"] == plain.json()["seq"]
