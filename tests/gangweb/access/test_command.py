"""``manage.py access grant|token|revoke`` as the contract in docs/design.md says, and the tokens it prints."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from gangweb.access.models import ApiToken, Grant
from gangweb.access.scope import scope_for

pytestmark = pytest.mark.django_db


def access(*args: str) -> tuple[str, str, int]:
    out, err = StringIO(), StringIO()
    try:
        call_command("access", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code)
    return out.getvalue(), err.getvalue(), code


def test_grant_creates_then_updates_the_user_and_says_what_it_did():
    out, _, code = access("grant", "alice", "--role", "viewer", "--namespaces", "team-b,team-a")
    assert code == 0 and "created user alice: viewer in namespaces team-a,team-b" in out
    user = get_user_model().objects.get(username="alice")
    assert not user.is_staff and not user.has_usable_password()
    assert (
        scope_for(user).namespaces() == {"team-a", "team-b"} and scope_for(user).role_in("team-a") == "viewer"
    )

    out, _, _ = access("grant", "alice", "--role", "operator", "--all-namespaces")
    assert "updated user alice: viewer in namespaces team-a,team-b -> operator in all namespaces" in out
    fresh = get_user_model().objects.get(username="alice")
    assert scope_for(fresh).all_namespaces and scope_for(fresh).may("approve", "anywhere")
    out, _, _ = access("grant", "alice", "--role", "operator", "--all-namespaces")
    assert "unchanged" in out
    assert Grant.objects.count() == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["grant", "bob", "--role", "boss", "--all-namespaces"], "invalid choice: 'boss'"),
        (
            ["grant", "bob", "--role", "viewer"],
            "one of the arguments --namespaces --all-namespaces is required",
        ),
        (["grant", "bob", "--role", "viewer", "--namespaces", "a", "--all-namespaces"], "not allowed with"),
        (
            ["grant", "bob", "--role", "viewer", "--namespaces", "Team_A"],
            "not a Kubernetes namespace name: Team_A",
        ),
        (["grant", "bob", "--role", "viewer", "--namespaces", " , "], "at least one namespace"),
        (["token", "nobody"], "no user 'nobody'"),
        (["revoke", "nobody"], "no user 'nobody'"),
    ],
)
def test_bad_input_is_one_clear_line_and_writes_nothing(args, message, capsys):
    _, err, code = access(*args)
    err += capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert not get_user_model().objects.filter(username="bob").exists()


def test_token_prints_only_the_token_and_stores_only_its_digest():
    access("grant", "ci", "--role", "viewer", "--all-namespaces")
    out, _, code = access("token", "ci", "--expires-days", "3")
    token = out.strip()
    assert code == 0 and out.count("\n") <= 1 and token.startswith("gwt_") and len(token) >= 40
    stored = ApiToken.objects.get(hint=token[4:10])
    assert stored.digest == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(list(ApiToken.objects.values()))
    assert timedelta(days=2, hours=23) < stored.expires_at - timezone.now() <= timedelta(days=3)


@pytest.mark.parametrize("days", ["0", "-1", "abc", "999999"])
def test_token_refuses_a_bad_expiry(days, capsys):
    access("grant", "ci", "--role", "viewer", "--all-namespaces")
    _, err, code = access("token", "ci", "--expires-days", days)
    assert code == 2 and "--expires-days" in err + capsys.readouterr().err
    assert not ApiToken.objects.exists()


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_a_token_authenticates_until_revoked(client, settings):
    settings.DEMO = False
    access("grant", "ci", "--role", "viewer", "--namespaces", "team-a")
    first, second = (access("token", "ci")[0].strip() for _ in range(2))
    for token in (first, second):
        assert client.get("/api/requests/", **bearer(token)).status_code == 200
    out, _, _ = access("revoke", "ci")
    assert "revoked 2 tokens of ci" in out
    for token in (first, second):
        response = client.get("/api/requests/", **bearer(token))
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == 'Bearer realm="gangweb", Basic realm="gangweb"'
    assert client.get("/api/requests/", **bearer(access("token", "ci")[0].strip())).status_code == 200


def test_an_expired_token_is_refused(client, settings):
    settings.DEMO = False
    access("grant", "ci", "--role", "viewer", "--all-namespaces")
    token = access("token", "ci", "--expires-days", "1")[0].strip()
    assert client.get("/api/requests/", **bearer(token)).status_code == 200
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/requests/", **bearer(token)).status_code == 401


def test_a_token_of_a_deactivated_user_or_a_made_up_one_is_refused(client, settings):
    settings.DEMO = False
    access("grant", "ci", "--role", "viewer", "--all-namespaces")
    token = access("token", "ci")[0].strip()
    assert client.get("/api/requests/", **bearer(token[:-2] + "xx")).status_code == 401
    assert client.get("/api/requests/", HTTP_AUTHORIZATION="Bearer two tokens").status_code == 401
    get_user_model().objects.filter(username="ci").update(is_active=False)
    assert client.get("/api/requests/", **bearer(token)).status_code == 401
