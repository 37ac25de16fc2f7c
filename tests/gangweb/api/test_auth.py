"""Who may read the API: the dashboard's rule (open in the demo, signed in elsewhere)."""

from __future__ import annotations

import pytest

from tests.gangweb.api.conftest import basic_auth

pytestmark = pytest.mark.django_db

READS = ["/api/", "/api/requests/", "/api/evictions/", "/api/ledger/", "/api/plans/"]


@pytest.fixture
def one_request(make_request):
    return make_request("team-a", execute_it=False)


@pytest.mark.parametrize("path", READS + ["detail"])
def test_anonymous_readers_are_refused_outside_the_demo(client, settings, one_request, path):
    settings.DEMO = False
    path = f"/api/requests/{one_request.request.pk}/" if path == "detail" else path
    response = client.get(path)
    # v1's answer (these paths are its deprecated aliases): 401 offering Bearer and Basic, problem+json.
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["detail"] == "Authentication credentials were not provided."
    assert response["WWW-Authenticate"] == 'Bearer realm="gangweb", Basic realm="gangweb"'


@pytest.mark.parametrize("path", READS)
def test_in_the_demo_anyone_may_read_like_the_dashboard(client, settings, one_request, path):
    settings.DEMO = True
    assert client.get(path).status_code == 200
    assert client.get("/").status_code == 200  # the page says the same


def test_the_demo_rule_opens_reads_only(client, settings):
    settings.DEMO = True
    response = client.post("/api/plan/", {"podGroup": "team-a/train"}, content_type="application/json")
    assert response.status_code == 401


def test_basic_and_session_authentication_both_work(client, settings, reader, one_request):
    settings.DEMO = False
    response = client.get("/api/requests/", **basic_auth("platform-team", "s3cret-enough"))
    assert response.status_code == 200 and response.json()["count"] == 1
    assert client.get("/api/requests/", **basic_auth("platform-team", "wrong")).status_code == 401
    client.force_login(reader)
    assert client.get(f"/api/requests/{one_request.request.pk}/").json()["podGroup"] == "team-a/train"
