"""``GET /api/v1/nodes/{name}/``: one node as its page shows it (labels, taints, conditions, its pods, its
GPUs and DRA devices), every reader's, with the pods of namespaces a reader does not see only counted."""

from __future__ import annotations

import pytest

from tests.gangweb.api.v1.conftest import HIDDEN
from tests.gangweb.api.v1.test_contract import problem

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_node_shows_its_pods_and_squares_and_an_admin_sees_every_name(client, world, admin):
    body = client.get("/api/v1/nodes/node-4/", **admin).json()
    assert body["name"] == "node-4" and body["ready"] and not body["cordoned"]
    assert body["labels"]["kubernetes.io/hostname"] == "node-4"
    assert [c["type"] for c in body["conditions"]] == ["Ready"]
    assert [(p["namespace"], p["name"], p["podGroup"]) for p in body["pods"]] == [
        ("team-b", "hidden-b-0", "hidden-b")
    ]
    assert body["otherNamespaces"] == {"pods": 0, "gpus": 0}
    held = [d["heldBy"] for d in body["devices"]]
    assert len(held) == 8 and {"namespace": "team-b", "name": "hidden-b", "otherNamespace": False} in held
    # The node's squares are the map's squares.
    picture = client.get("/api/v1/map/", **admin).json()
    [row] = [n for n in picture["nodes"] if n["name"] == "node-4"]
    assert [None if d["heldBy"] is None else d["heldBy"]["name"] for d in body["devices"]] == [
        None if o is None else picture["gangs"][o]["name"] for o in row["gpus"]
    ]
    assert body["domain"] == picture["domains"][row["domain"]]["name"]
    assert picture["nodes"][body["mapIndex"]]["name"] == "node-4"  # what the live map.delta names it by


def test_a_team_reader_sees_other_teams_pods_on_a_node_only_as_counts(client, world, admin, a_viewer):
    everything = client.get("/api/v1/nodes/node-4/", **admin).json()
    mine = client.get("/api/v1/nodes/node-4/", **a_viewer).json()
    assert mine["pods"] == []
    gpus = sum(p["gpus"] for p in everything["pods"])
    assert mine["otherNamespaces"] == {"pods": len(everything["pods"]), "gpus": gpus} and gpus > 0
    assert [d["heldBy"] is None for d in mine["devices"]] == [
        d["heldBy"] is None for d in everything["devices"]
    ]
    assert {"namespace": None, "name": None, "otherNamespace": True} in [d["heldBy"] for d in mine["devices"]]
    for word in HIDDEN:
        assert word not in str(mine)


def test_an_unknown_node_is_a_404_problem(client, world, admin):
    assert "no node nowhere" in problem(client.get("/api/v1/nodes/nowhere/", **admin), 404)["detail"]
