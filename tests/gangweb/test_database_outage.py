"""A PostgreSQL outage through a real ASGI server: the API and the pages answer 503 with Retry-After, in
their own shapes, with no traceback, and answer as before once the database is back.

The database is a throwaway PostgreSQL of the test's own (initdb on a free port), stopped and started
again by the test; the shared one is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import REQUIRE_SERVICES, ROOT, free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")
API = "/api/v1/requests/"
PAGE = "/preemptions/"


class ThrowawayPostgres:
    """A PostgreSQL cluster in a temporary directory, on its own port, run as ``postgres`` when we are root
    (PostgreSQL refuses to run as root)."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="gangweb-outage-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            shutil.chown(self.directory, self.user)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(PG_BIN / program), *args], user=self.user, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{program}: {done.stdout}{done.stderr}"

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.directory / "log"), "-w", "start"
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        subprocess.run(
            [str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
            user=self.user,
            capture_output=True,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def own_postgres():
    if not (PG_BIN / "initdb").exists():
        message = f"no PostgreSQL 15 server binaries in {PG_BIN} (apt-get install postgresql-15)"
        if REQUIRE_SERVICES:
            pytest.fail(message)
        pytest.skip(message)
    postgres = ThrowawayPostgres()
    try:
        postgres.start()
        yield postgres
    finally:
        postgres.remove()


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def sign_in(client: httpx.Client, user: str, password: str) -> None:
    form = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    signed_in = client.post(
        "/login/", data={"username": user, "password": password, "csrfmiddlewaretoken": token, "next": "/"}
    )
    assert signed_in.status_code == 302, signed_in.text[:500]


def test_a_database_outage_is_a_503_with_retry_after_and_the_service_comes_back(
    own_postgres, asgi_server, tmp_path
):
    env = {
        **os.environ,
        "DATABASE_URL": own_postgres.url,
        "REDIS_URL": "",
        "KUBECONFIG": "",
        "GANGWEB_DEMO": "0",
        "GANGWEB_CLUSTER": "simulated",
        "SECRET_KEY": "outage-test-only-key-0123456789-0123456789",
        # Plain HTTP in the test: the session cookie must travel without TLS.
        "SESSION_COOKIE_SECURE": "0",
        "GANGWEB_VAR_DIR": str(tmp_path),
    }
    manage(env, "migrate", "--noinput")
    manage(env, "access", "grant", "alice", "--role", "viewer", "--all-namespaces")
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; u = User.objects.get(username='alice'); "
        "u.set_password('alice-pw-8e2'); u.save()",
    )
    token = manage(env, "access", "token", "alice").strip()
    address = asgi_server(env=env)
    api = httpx.Client(base_url=f"http://{address}", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    browser = httpx.Client(base_url=f"http://{address}", timeout=30)
    sign_in(browser, "alice", "alice-pw-8e2")
    assert api.get(API).status_code == 200
    assert browser.get(PAGE).status_code == 200

    own_postgres.stop()

    answer = api.get(API)
    assert answer.status_code == 503, answer.text[:500]
    assert answer.headers["content-type"] == "application/problem+json"
    assert int(answer.headers["retry-after"]) > 0
    problem = answer.json()
    assert (problem["status"], problem["title"], problem["instance"]) == (503, "service unavailable", API)
    assert "database" in problem["detail"] and "Traceback" not in answer.text

    page = browser.get(PAGE)
    assert page.status_code == 503, page.text[:500]
    assert page.headers["content-type"].startswith("text/html")
    assert int(page.headers["retry-after"]) > 0
    assert "database" in page.text and "Traceback" not in page.text

    # Unauthenticated callers (no database needed to refuse them) are still told to sign in.
    assert httpx.get(f"http://{address}{API}", timeout=30).status_code == 401

    own_postgres.start()

    assert api.get(API).status_code == 200
    assert browser.get(PAGE).status_code == 200
