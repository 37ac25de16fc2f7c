"""``/api/v1/podgroups/`` as the /gangs/ page reads it: a waiting gang's reason is the GPU map's, and
the page's filters, sort and search are v1 parameters, validated like the others."""

from __future__ import annotations

import pytest

from gangweb.dashboard import live
from tests.gangweb.api.v1.test_contract import problem

pytestmark = [pytest.mark.usefixtures("small_simulation"), pytest.mark.django_db(transaction=True)]
WAITING = "pending,short,running-partly"


@pytest.fixture(autouse=True)
def fresh_picture():
    live.reset()
    yield
    live.reset()


def rows(client, admin, **query) -> list[dict]:
    body = client.get("/api/v1/podgroups/", {"limit": 1000, **query}, **admin).json()
    assert body["count"] == len(body["results"]), body
    return body["results"]


def test_a_waiting_gangs_reason_is_the_maps(client, admin):
    """The simulation's condition messages are written mid-tick; the map's reason is counted from one
    reading of the cluster, and the API says the same words beside the same squares."""
    picture, _ = live.current()
    mapped = {g["key"]: g for g in picture["gangs"] if g["podGroup"]}
    served = {r["podGroup"]: r for r in rows(client, admin)}
    assert set(served) == set(mapped)
    waiting = [key for key, g in mapped.items() if g["state"] != "running"]
    assert waiting, "the small simulation has waiting gangs"
    for key in waiting:
        assert served[key]["reason"] == mapped[key]["reason"], key
        assert served[key]["reason"].startswith(("needs ", "waiting for ")), served[key]["reason"]
    assert len(rows(client, admin, state="pending,short")) == picture["totals"]["waitingGangs"]


def test_the_pages_filters_sort_and_search(client, admin):
    everything = rows(client, admin)
    assert [r["podGroup"] for r in everything] == sorted(r["podGroup"] for r in everything)
    waiting = rows(client, admin, state=WAITING, sort="priority")
    assert waiting and all(r["state"] in WAITING.split(",") for r in waiting)
    assert [r["priority"] for r in waiting] == sorted((r["priority"] for r in waiting), reverse=True)
    longest = rows(client, admin, sort="waiting")
    assert [r["waitingSeconds"] for r in longest] == sorted(
        (r["waitingSeconds"] for r in longest), reverse=True
    )
    biggest = rows(client, admin, sort="gpus")
    assert [r["gpus"] for r in biggest] == sorted((r["gpus"] for r in biggest), reverse=True)
    one = waiting[0]
    found = rows(client, admin, q=one["name"].upper())
    assert one["podGroup"] in [r["podGroup"] for r in found]
    assert all(one["name"] in r["podGroup"] for r in found)
    tier = one["priorityClass"] or "(no priority class)"
    same = rows(client, admin, priorityClass=tier)
    assert same and all((r["priorityClass"] or "(no priority class)") == tier for r in same)
    assert len(same) < len(everything) or len({r["priorityClass"] for r in everything}) == 1
    assert rows(client, admin, q="no-such-gang-anywhere") == []


@pytest.mark.parametrize(
    "query, parameter",
    [("sort=nope", "sort"), ("sort=name&sort=gpus", "sort"), ("q=a&q=b", "q"), ("state=waiting", "state")],
)
def test_bad_page_parameters_are_400_naming_them(client, admin, query, parameter):
    body = problem(client.get(f"/api/v1/podgroups/?{query}", **admin), 400)
    assert list(body["errors"]) == [parameter] and parameter in body["detail"]
