"""Fixtures of the access tests: the ledger requests of the API tests, and a real server (daphne)."""

from __future__ import annotations

import os

import pytest

from tests.gangweb.access.http import manage
from tests.gangweb.api.conftest import make_request  # noqa: F401 (a fixture)
from tests.gangweb.conftest import EMBEDDED_DEFAULTS


@pytest.fixture
def server(asgi_server, broker, tmp_path):
    """A server that is no demo (Redis), with vera: viewer in team-a, password set. ``start(**env)``
    returns its address and the environment ``manage.py`` runs beside it with."""

    def start(**extra: str) -> tuple[str, dict]:
        env = {
            **EMBEDDED_DEFAULTS,
            "GANGWEB_DEMO": "",
            "REDIS_URL": broker,
            "SESSION_COOKIE_SECURE": "0",
            "GANGWEB_SIM_NODES": "8",
            "GANGWEB_SIM_TICK_SECONDS": "1",
            "GANGWEB_SESSION_RECHECK_SECONDS": "600",  # the push, not the backstop, must close the socket
            **extra,
        }
        run_env = {**os.environ, "GANGWEB_VAR_DIR": str(tmp_path), **env}
        manage(run_env, "migrate", "--verbosity", "0")
        manage(run_env, "access", "grant", "vera", "--role", "viewer", "--namespaces", "team-a")
        manage(
            run_env,
            "shell",
            "-c",
            "from django.contrib.auth.models import User; u = User.objects.get(username='vera'); "
            "u.set_password('vera-password-1'); u.save()",
        )
        return asgi_server(env=env), run_env

    return start
