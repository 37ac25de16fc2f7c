"""``GET /api/v1/queues/`` and ``/api/v1/queues/{system}/{name}/``: the read model over the live cluster, cut
to the reader (docs/queues.md "Who sees which queue"), and in the OpenAPI schema."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db(transaction=True)


def _names(body):
    return {(q["system"], q["name"]) for q in body["results"]}


def test_an_admin_sees_every_queue_and_a_team_reader_the_ones_its_namespaces_use(
    client, world, admin, a_viewer
):
    everything = client.get(reverse("api:v1:queues"), **admin)
    assert everything.status_code == 200, everything.content
    assert _names(everything.json()) == {
        ("kueue", n) for n in ("all", "shared", "hidden-b-cq", "team-a/main", "team-b/main", "team-b/own")
    }
    mine = client.get(reverse("api:v1:queues"), **a_viewer)
    assert _names(mine.json()) == {("kueue", "all"), ("kueue", "shared"), ("kueue", "team-a/main")}
    shared = next(q for q in mine.json()["results"] if q["name"] == "shared")
    assert shared["resources"]["gpu"]["guaranteed"] == 16 and shared["parent"] == "all"


def test_one_queue_and_a_hidden_one(client, world, a_viewer):
    own = client.get(
        reverse("api:v1:queue-detail", kwargs={"system": "kueue", "name": "team-a/main"}), **a_viewer
    )
    assert own.status_code == 200 and own.json()["kind"] == "LocalQueue"
    hidden = client.get(
        reverse("api:v1:queue-detail", kwargs={"system": "kueue", "name": "hidden-b-cq"}), **a_viewer
    )
    assert hidden.status_code == 404
    assert hidden["Content-Type"].startswith("application/problem+json")


def test_the_schema_lists_both_paths(client, admin):
    schema = client.get(reverse("api:schema"), **admin)
    assert schema.status_code == 200
    text = schema.content.decode()
    assert "/api/v1/queues/" in text and "/api/v1/queues/{system}/{name}/" in text
