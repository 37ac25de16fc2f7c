"""The dashboard's own sign-in page: any active user, CSRF enforced, sign-out by POST only."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from gangweb.access.grants import grant

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(settings):
    settings.DEMO = False
    grant("vera", "viewer", namespaces=["team-a"])
    user = get_user_model().objects.get(username="vera")
    user.set_password("a long password for vera")
    user.save()
    return user


def csrf_of(response) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.content.decode()).group(1)


def test_a_non_staff_user_signs_in_and_lands_where_they_were_going(viewer):
    client = Client(enforce_csrf_checks=True)
    page = client.get("/")
    assert page.status_code == 302 and page["Location"] == "/login/?next=/"
    form = client.get("/login/?next=/preemptions/")
    assert form.status_code == 200 and b"Sign in" in form.content and b"/admin/" not in form.content
    response = client.post(
        "/login/",
        {
            "username": "vera",
            "password": "a long password for vera",
            "next": "/preemptions/",
            "csrfmiddlewaretoken": csrf_of(form),
        },
    )
    assert response.status_code == 302 and response["Location"] == "/preemptions/"
    page = client.get("/")
    assert page.status_code == 200 and b"vera" in page.content and b'action="/logout/"' in page.content


def test_sign_in_without_the_csrf_token_is_refused(viewer):
    client = Client(enforce_csrf_checks=True)
    client.get("/login/")
    response = client.post("/login/", {"username": "vera", "password": "a long password for vera"})
    assert response.status_code == 403
    assert client.get("/").status_code == 302  # still signed out


def test_a_wrong_password_says_so_and_signs_nobody_in(viewer):
    client = Client(enforce_csrf_checks=True)
    form = client.get("/login/")
    response = client.post(
        "/login/", {"username": "vera", "password": "nope", "csrfmiddlewaretoken": csrf_of(form)}
    )
    assert response.status_code == 200 and b'role="alert"' in response.content
    assert client.get("/").status_code == 302


def test_a_next_pointing_elsewhere_is_not_followed(viewer):
    client = Client(enforce_csrf_checks=True)
    form = client.get("/login/")
    response = client.post(
        "/login/",
        {
            "username": "vera",
            "password": "a long password for vera",
            "next": "https://evil.example/",
            "csrfmiddlewaretoken": csrf_of(form),
        },
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_sign_out_needs_post_and_the_csrf_token(viewer):
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)
    page = client.get("/")
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/").status_code == 403  # no token
    assert client.get("/").status_code == 200  # still signed in
    response = client.post("/logout/", {"csrfmiddlewaretoken": csrf_of(page)})
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.get("/").status_code == 302


@pytest.mark.parametrize("demo", [False, True])
def test_a_signed_in_user_without_a_role_is_told_so_and_how_to_get_one(settings, demo):
    settings.DEMO = demo  # in the demo too: a signed-in user reads as themself, not as the demo's reader
    nora = get_user_model().objects.create_user("nora", password="a long password for nora")
    client = Client(enforce_csrf_checks=True)
    client.force_login(nora)
    for path in ("/", "/gangs/", "/preemptions/", "/what-if/"):
        page = client.get(path)
        assert page.status_code == 403, path
        text = page.content.decode()
        assert "signed in as <strong>nora</strong>" in text and "no role has been granted" in text
        assert "python manage.py access grant nora --role viewer" in text
        assert 'action="/logout/"' in text and "Sign out" in text
    # /login/ sends her on to the page that says so, not round in a loop
    again = client.get("/login/")
    assert again.status_code == 302 and again["Location"] == "/"
    response = client.post("/logout/", {"csrfmiddlewaretoken": csrf_of(page)})
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.get("/").status_code == (200 if demo else 302)  # signed out: the demo's reader, or sign in


def test_session_posts_to_the_api_need_the_csrf_token(viewer):
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)
    response = client.post("/api/plan/", {"podGroup": "team-a/train"}, content_type="application/json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]


def test_a_scoped_reader_sees_only_their_namespaces_on_the_preemptions_page(viewer, make_request):
    make_request("team-a", execute_it=False)
    make_request("team-b", execute_it=False)
    client = Client()
    client.force_login(viewer)
    text = client.get("/api/v1/preemptions/").content.decode()
    assert "team-a" in text and "team-b" not in text
