"""Two real web processes (uvicorn, as deploy/'s two web replicas) on one Redis: a user's simulate calls are
counted together, so the second replica refuses the call past ``GANGWEB_SIMULATE_RATE`` (docs/design.md,
"Shared limits")."""

from __future__ import annotations

import os

import httpx
import pytest

from tests.conftest import migrate_and_run
from tests.gangweb.conftest import EMBEDDED_DEFAULTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_two_web_replicas_share_one_simulate_rate(asgi_server, broker, tmp_path):
    env = {
        **EMBEDDED_DEFAULTS,
        "GANGWEB_DEMO": "0",
        "SECRET_KEY": "shared-throttle-test",
        "REDIS_URL": broker,
        "GANGWEB_SIM_NODES": "8",
        "GANGWEB_SIM_TICK_SECONDS": "0",
        "GANGWEB_SIMULATE_RATE": "2/min",
    }
    script = (
        "import io; from django.core.management import call_command\n"
        "call_command('access', 'grant', 'ana', '--role', 'viewer', '--namespaces', 'team-a', stdout=io.StringIO())\n"
        "out = io.StringIO(); call_command('access', 'token', 'ana', stdout=out); print(out.getvalue().strip())\n"
    )
    done = migrate_and_run({**os.environ, **env, "GANGWEB_VAR_DIR": str(tmp_path)}, script)
    token = done.stdout.split()[-1]
    assert token.startswith("gwt_"), done.stdout
    first, second = asgi_server(env=env), asgi_server(env=env)

    def simulate(address: str) -> httpx.Response:
        # An empty body: the throttle is charged before the body is judged (a 400 still counts).
        return httpx.post(
            f"http://{address}/api/v1/simulate/",
            json={},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    assert [simulate(first).status_code for _ in range(2)] == [400, 400]
    refused = simulate(second)
    assert refused.status_code == 429, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert simulate(first).status_code == 429
