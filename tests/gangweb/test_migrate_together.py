"""Two `manage.py migrate` processes at once on one empty PostgreSQL database (deploy/'s two beat replicas
each run the migrations in an init container): both succeed, and the schema is complete once."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from django.db import connection

from tests.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def empty_database():
    if connection.vendor != "postgresql":
        pytest.skip("the advisory lock is PostgreSQL's (set DATABASE_URL)")
    db = connection.settings_dict
    server = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"gangweb_migrate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_two_migrations_at_once_both_succeed(empty_database):
    env = {**os.environ, "DATABASE_URL": empty_database, "SECRET_KEY": "migrate-test", "GANGWEB_DEMO": "0"}
    runs = [
        subprocess.Popen(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=240)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "\n----\n".join(o[-3000:] for o in outputs)
    # one of them applied everything, the other found nothing left to apply
    assert sorted("No migrations to apply." in o for o in outputs) == [False, True], outputs
    with psycopg.connect(empty_database) as check:
        twice = check.execute(
            "SELECT app, name FROM django_migrations GROUP BY app, name HAVING count(*) > 1"
        )
        assert twice.fetchall() == []
