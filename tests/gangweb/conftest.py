"""Fixtures for the dashboard tests: a fresh simulated cluster, and the real demo command as a process."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port

# The demo runs on the embedded defaults, whatever services the surrounding test run points at.
EMBEDDED_DEFAULTS = {
    "DATABASE_URL": "",
    "REDIS_URL": "",
    "KUBECONFIG": "",
    "GANGWEB_DEMO": "1",
    "GANGWEB_CLUSTER": "simulated",
    "PYTHONUNBUFFERED": "1",
}


@pytest.fixture
def small_simulation(settings):
    """A 16-node simulated cluster built fresh for the test, with no ticker of its own."""
    from scheduler.preemption.runtime import reset_cluster

    settings.GANGWEB_CLUSTER = "simulated"
    settings.GANGWEB_SIM_NODES = 16
    settings.GANGWEB_SIM_SEED = 7
    settings.GANGWEB_SIM_TICK_SECONDS = 0
    settings.DEMO = True
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    reset_cluster()
    yield
    reset_cluster()


@dataclass
class DemoProcess:
    proc: subprocess.Popen
    base_url: str
    password: str  # "" when the login line names no password (a database that is not the demo's)
    login: str = ""
    lines: list[str] = field(default_factory=list)
    stderr_path: Path | None = None
    var_dir: Path | None = None

    def stop(self, sig, timeout: float = 20) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path else ""


def _reader(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))
    out.put(None)


@pytest.fixture
def start_demo(tmp_path):
    """Start ``python manage.py demo --port <free>``; returns once it printed its URL and login line."""
    started: list[DemoProcess] = []

    def start(
        env: dict[str, str] | None = None, var_dir: Path | None = None, timeout: float = 90
    ) -> DemoProcess:
        port = free_port()
        var = var_dir or tmp_path / "var"
        stderr_path = tmp_path / f"demo-{port}.stderr"
        full_env = {**os.environ, **EMBEDDED_DEFAULTS, "GANGWEB_VAR_DIR": str(var), **(env or {})}
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--port", str(port)],
            cwd=ROOT,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=stderr_path.open("w"),
            text=True,
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
        demo = DemoProcess(proc, "", "", stderr_path=stderr_path, var_dir=var)
        started.append(demo)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (demo.base_url and demo.login):
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(
                    f"demo exited ({proc.wait()}) before it was up:\n{demo.stderr()[-3000:]}"
                )
            demo.lines.append(line)
            if match := re.search(r"running: (http://\S+?)/?$", line):
                demo.base_url = match.group(1)
            if match := re.search(r"login:\s+(.+?)\s+\(admin: ", line):
                demo.login = match.group(1)
                demo.password = demo.login.split(" / ", 1)[1] if demo.login.startswith("admin / ") else ""
        if not (demo.base_url and demo.login):
            raise AssertionError(f"demo did not print its URL and login in {timeout}s: {demo.lines}")
        # Keep draining stdout so the process never blocks on a full pipe.
        threading.Thread(
            target=lambda: [demo.lines.append(x) for x in iter(lines.get, None)], daemon=True
        ).start()
        return demo

    yield start
    for demo in started:
        if demo.proc.poll() is None:
            demo.proc.kill()
            demo.proc.wait(timeout=10)


def grant_user(var_dir: Path, user: str, password: str, *grant: str) -> None:
    """``manage.py access grant USER ...`` on the demo's database (its var dir), then the user's password
    set as ``manage.py changepassword`` would (the grant creates users without one)."""
    env = {**os.environ, **EMBEDDED_DEFAULTS, "GANGWEB_VAR_DIR": str(var_dir)}
    done = subprocess.run(
        [sys.executable, "manage.py", "access", "grant", user, *grant],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(("created user", "updated user", "unchanged")), done.stdout
    code = (
        "from django.contrib.auth.models import User; u = User.objects.get(username="
        f"{user!r}); u.set_password({password!r}); u.save()"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, check=True, capture_output=True
    )


def add_user_without_role(var_dir: Path, user: str, password: str) -> None:
    """A local user on the demo's database with a password and no grant (no role anywhere)."""
    env = {**os.environ, **EMBEDDED_DEFAULTS, "GANGWEB_VAR_DIR": str(var_dir)}
    code = (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_user(username={user!r}, password={password!r})"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, check=True, capture_output=True
    )


def a_request(base_url: str, timeout: float = 150) -> int:
    """The id of one of the demo's preemption requests, once it has one (its scene makes one in the first
    minute): the decision view (/requests/<id>/) to open."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base_url + "/api/v1/requests/?limit=1", timeout=30) as answer:
            rows = json.loads(answer.read())["results"]
        if rows:
            return rows[0]["id"]
        time.sleep(1)
    raise AssertionError(f"the demo opened no preemption request in {timeout:.0f} s")


def sign_in(page, base_url: str, user: str, password: str) -> None:
    """Through the real /login/ page, as a person would; returns once the page after it has loaded."""
    page.goto(base_url + "/login/")
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector(f"#who:text-is('{user}')", timeout=30_000)
