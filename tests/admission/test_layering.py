"""The webhook's decision modules stay free of Django, the database and Redis (docs/ARCHITECTURE.md):
they must answer with both down, and be testable without settings."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.test_layering import imported_roots

PURE = ["review", "podview", "labels", "inference", "mutate", "validate", "apirules", "controllers", "state", "policy",
        "podgroups", "handler", "recorder", "metrics", "certs", "webhookconfig", "names"]  # fmt: skip
FORBIDDEN = {"django", "redis", "channels", "celery", "psycopg", "rest_framework"}


@pytest.mark.parametrize("module", PURE)
def test_decision_modules_do_not_import_django_or_services(module):
    assert not imported_roots(ROOT / "admission" / f"{module}.py") & FORBIDDEN
