"""The public demo's reader: one rule (``scope_for``) for the pages, the API and the live stream."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_in_the_demo_a_signed_out_reader_reads_the_page_and_the_api(settings):
    settings.DEMO = True
    client = Client()
    assert client.get("/").status_code == 200
    assert client.get("/api/v1/nodes/").status_code == 200


def test_in_the_demo_a_user_without_a_role_is_refused_by_the_page_as_by_the_api(settings, django_user_model):
    settings.DEMO = True
    django_user_model.objects.create_user("nora", password="a long password for nora")
    client = Client()
    client.login(username="nora", password="a long password for nora")
    answer = client.get("/api/v1/nodes/")
    assert answer.status_code == 403 and "no role" in answer.json()["detail"]
    # the page says so too, and who she is signed in as (it sent her back to /login/ before)
    page = client.get("/")
    assert page.status_code == 403 and b"No role yet" in page.content and b"nora" in page.content


def test_outside_the_demo_a_signed_out_reader_reads_neither(settings):
    settings.DEMO = False
    client = Client()
    assert client.get("/").status_code == 302
    assert client.get("/api/v1/nodes/").status_code == 401
