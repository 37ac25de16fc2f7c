"""The dashboard process answers the webhook's paths only in the demo: elsewhere they belong to
``webhook serve`` (its own process, TLS, optionally a client certificate), and anonymous callers of the
dashboard must not reach them."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.admission.support import load_pod, review_bytes

PATHS = ("/admission/mutate", "/admission/validate")


@pytest.mark.parametrize("path", PATHS)
def test_outside_the_demo_the_admission_paths_are_not_served(settings, path):
    settings.DEMO = False
    response = Client().generic(
        "POST", path, review_bytes(load_pod("job-parallel.yaml")), content_type="application/json"
    )
    assert response.status_code == 404
    assert Client().get(path).status_code == 404


@pytest.mark.parametrize("path", PATHS)
def test_the_demo_serves_them(settings, path):
    settings.DEMO = True
    response = Client().generic(
        "POST",
        path,
        review_bytes(load_pod("job-parallel.yaml"), uid="demo-1"),
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["response"]["uid"] == "demo-1"
