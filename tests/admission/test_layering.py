"""The webhook's decision modules stay free of Django, the database and Redis (docs/ARCHITECTURE.md):
they must answer with both down, and be testable without settings."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.test_layering import imported_roots

PURE = ["review", "podview", "labels", "inference", "mutate", "validate", "apirules", "controllers", "state", "policy",
        "podgroups", "handler", "recorder", "metrics", "certs", "webhookconfig", "names", "resources",
        *sorted(f"sources/{path.stem}" for path in (ROOT / "admission" / "sources").glob("*.py"))]  # fmt: skip
# Not pure (they talk to the API server, or are uvicorn's protocol), but no Django or services either:
# the server process runs them with the database and Redis down, and the ensurer's pass is tested without
# settings (its Celery task, admission/tasks.py, is the Django side).
SERVING = ["watch", "protocol", "ensurer"]
FORBIDDEN = {"django", "redis", "channels", "celery", "psycopg", "rest_framework"}


@pytest.mark.parametrize("module", PURE + SERVING)
def test_decision_modules_do_not_import_django_or_services(module):
    assert not imported_roots(ROOT / "admission" / f"{module}.py") & FORBIDDEN


@pytest.mark.parametrize("module", PURE)
def test_decision_modules_do_not_talk_to_the_api_server(module):
    """What the webhook knows of the cluster comes in through admission.watch only."""
    assert not imported_roots(ROOT / "admission" / f"{module}.py") & {"kubernetes", "scheduler", "uvicorn"}
