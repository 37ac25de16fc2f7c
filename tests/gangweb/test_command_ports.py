"""Every ``--port`` of ``manage.py`` is checked: outside 1 to 65535 it is a usage error (exit 2), never a random port."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

COMMANDS = [
    ("webhook", "serve"),
    ("webhook", "config"),
    ("demo",),
]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("value", ["99999", "0", "-1", "http"])
def test_a_port_out_of_range_or_not_a_number_is_a_usage_error(command, value):
    done = manage(*command, "--port", value)
    assert done.returncode == 2, done.stderr[-500:]
    last = done.stderr.strip().splitlines()[-1]
    assert "argument --port:" in last and value in last, last
    assert "Traceback" not in done.stderr


def test_the_demo_checks_gangweb_port_alike():
    done = manage("demo", GANGWEB_PORT="99999")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "CommandError: GANGWEB_PORT must be a port between 1 and 65535, got 99999"
    )
