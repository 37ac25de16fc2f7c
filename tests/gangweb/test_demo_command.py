"""``python manage.py demo`` as a user runs it: a real process, a real port, a real login, a clean stop."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
import websockets

from tests.conftest import ROOT, free_port
from tests.gangweb.conftest import EMBEDDED_DEFAULTS

pytestmark = pytest.mark.slow


def admin_login(base_url: str, password: str) -> httpx.Response:
    with httpx.Client(base_url=base_url, timeout=10, follow_redirects=True) as client:
        form = client.get("/admin/login/?next=/admin/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        return client.post(
            "/admin/login/?next=/admin/",
            data={"csrfmiddlewaretoken": token, "username": "admin", "password": password, "next": "/admin/"},
            headers={"Referer": f"{base_url}/admin/login/"},
        )


async def two_deltas(base_url: str) -> list[dict]:
    address = base_url.removeprefix("http://")
    async with websockets.connect(f"ws://{address}/ws/live/", origin=base_url) as ws:
        await ws.send(json.dumps({"type": "subscribe", "topics": {"map": None}}))
        out = []
        while len(out) < 2:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
            for message in frame["messages"] if frame["type"] == "batch" else [frame]:
                if message["type"] == "map.delta":
                    out.append(message)
        return out[:2]


def test_demo_starts_serves_the_live_page_and_stops_cleanly(start_demo):
    demo = start_demo(env={"GANGWEB_SIM_TICK_SECONDS": "0.3"})
    assert demo.base_url.startswith("http://127.0.0.1:")

    page = httpx.get(f"{demo.base_url}/", timeout=10)
    assert page.status_code == 200
    assert 'id="gpu-map"' in page.text and "GPUs allocated" in page.text
    assert httpx.get(f"{demo.base_url}/healthz", timeout=10).json() == {"status": "ok"}
    assert httpx.get(f"{demo.base_url}/static/dashboard/dashboard.css", timeout=10).status_code == 200

    picture = httpx.get(f"{demo.base_url}/api/v1/map/", timeout=10).json()
    assert len(picture["nodes"]) == 64  # the embedded default cluster
    deltas = asyncio.run(two_deltas(demo.base_url))
    assert deltas[1]["seq"] > deltas[0]["seq"]  # the demo's own ticker moves the simulation

    landed = admin_login(demo.base_url, demo.password)
    assert landed.url.path == "/admin/" and "Site administration" in landed.text
    password_file = Path(demo.var_dir) / "demo-admin-password"
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert password_file.read_text() == demo.password + "\n"

    assert demo.stop(signal.SIGTERM) == 0
    assert any("stopped" in line for line in demo.lines)
    assert "Traceback" not in demo.stderr()


def test_admin_password_from_the_environment_and_ctrl_c(start_demo, tmp_path):
    demo = start_demo(env={"GANGWEB_ADMIN_PASSWORD": "correct-horse-battery"})
    assert demo.password == "correct-horse-battery"
    assert admin_login(demo.base_url, "correct-horse-battery").url.path == "/admin/"
    assert demo.stop(signal.SIGINT) == 0
    assert "Traceback" not in demo.stderr()

    # Started again on the same data, without the variable: the admin keeps that password.
    again = start_demo(var_dir=tmp_path / "var")
    assert "unchanged" in " ".join(again.lines)
    assert admin_login(again.base_url, "correct-horse-battery").url.path == "/admin/"
    assert again.stop(signal.SIGINT) == 0


def test_a_busy_port_is_a_one_line_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "manage.py", "demo", "--port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, **EMBEDDED_DEFAULTS, "GANGWEB_VAR_DIR": str(tmp_path)},
            timeout=60,
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_demo_runs_gangwebs_pipeline_in_process(start_demo):
    """No broker in the demo: detection, planning and eviction run inside it, and the browser hears of them."""
    demo = start_demo(env={"GANGWEB_SIM_TICK_SECONDS": "0.5", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"})
    assert any("detects waiting gangs" in line for line in demo.lines)

    async def pipeline_events() -> set[str]:
        seen: set[str] = set()
        address = demo.base_url.removeprefix("http://")
        async with websockets.connect(f"ws://{address}/ws/live/", origin=demo.base_url) as ws:
            await ws.send(json.dumps({"type": "subscribe", "topics": {"ledger": None}}))
            deadline = asyncio.get_running_loop().time() + 40
            while (
                not {"plan.created", "gang.placed"} <= seen and asyncio.get_running_loop().time() < deadline
            ):
                frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
                seen.update(m["type"] for m in (frame["messages"] if frame["type"] == "batch" else [frame]))
        return seen

    seen = asyncio.run(pipeline_events())
    assert {"request.opened", "plan.created", "gang.placed"} <= seen, seen
    assert demo.stop(signal.SIGTERM) == 0
    assert "Traceback" not in demo.stderr()


def test_the_demo_stages_its_scene_a_preemption_for_a_top_tier_gang(start_demo):
    """The scripted scene (scheduler/simulation/scene.py): the gang arrives, gangweb plans and evicts for
    it, and its request succeeds once the gang is placed; the banner is still the last thing printed."""
    demo = start_demo(
        env={
            "GANGWEB_SIM_TICK_SECONDS": "0.5",
            "GANGWEB_DETECT_INTERVAL_SECONDS": "1",
            "GANGWEB_DEMO_SCENE_SECONDS": "1",
            "GANGWEB_SIM_LOSS_TICKS": "0",
            "GANGWEB_PREEMPTION_NOTICE_SECONDS": "3",
        }
    )
    wanted = "team-llm/scene-serve"

    story: list[str] = []  # every event of the scene's gang with its reason, for a failure's message

    async def scene_events() -> list[str]:
        seen: list[str] = []
        address = demo.base_url.removeprefix("http://")
        async with websockets.connect(f"ws://{address}/ws/live/", origin=demo.base_url) as ws:
            await ws.send(json.dumps({"type": "subscribe", "topics": {"ledger": None}}))
            deadline = asyncio.get_running_loop().time() + 90  # generous: a loaded 2-core machine
            while "gang.placed" not in seen and asyncio.get_running_loop().time() < deadline:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
                for message in frame["messages"] if frame["type"] == "batch" else [frame]:
                    if (message.get("payload") or {}).get("podGroup") == wanted:
                        seen.append(message["type"])
                        story.append(f"{message['type']}: {(message.get('payload') or {}).get('reason', '')}")
        return seen

    seen = asyncio.run(scene_events())
    assert seen[0] == "request.opened" and "plan.created" in seen and "gang.placed" in seen, "\n".join(story)
    # The demo gives its victims notice (GANGWEB_PREEMPTION_NOTICE_SECONDS: 10 s by default, 3 s here) first.
    assert seen.index("notice.given") < seen.index("gang.placed"), seen
    printed = [line.strip() for line in demo.lines if line.strip()]
    assert printed[-1].startswith("stop:"), f"the banner is the last thing printed: {printed[-3:]}"
    assert demo.stop(signal.SIGTERM) == 0
    assert "Traceback" not in demo.stderr()


def test_an_impossible_simulation_is_a_one_line_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "demo", "--port", str(free_port())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **EMBEDDED_DEFAULTS, "GANGWEB_VAR_DIR": str(tmp_path), "GANGWEB_SIM_NODES": "0"},
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "CommandError: cannot set up the simulated cluster: "
        "a simulated cluster needs at least one node, got 0"
    )


def test_an_unreachable_database_is_a_one_line_error(tmp_path):
    closed = free_port()  # nothing listens there
    result = subprocess.run(
        [sys.executable, "manage.py", "demo", "--port", str(free_port())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            **EMBEDDED_DEFAULTS,
            "GANGWEB_VAR_DIR": str(tmp_path),
            "GANGWEB_DEMO": "",
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/gangweb",
        },
        timeout=60,
    )
    assert result.returncode == 1
    assert "cannot prepare the database" in result.stderr and "DATABASE_URL" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_stops_cleanly_while_a_browser_is_still_watching(start_demo):
    demo = start_demo(env={"GANGWEB_SIM_TICK_SECONDS": "0.3"})
    address = demo.base_url.removeprefix("http://")

    async def watch_while_stopping() -> str:
        async with websockets.connect(f"ws://{address}/ws/live/", origin=demo.base_url) as ws:
            await ws.send(json.dumps({"type": "subscribe", "topics": {"map": None}}))
            await asyncio.wait_for(ws.recv(), 10)
            demo.proc.send_signal(signal.SIGTERM)
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 15)
            except websockets.exceptions.ConnectionClosed as closed:
                return f"closed {closed.rcvd.code if closed.rcvd else None}"

    assert asyncio.run(watch_while_stopping()).startswith("closed")
    assert demo.proc.wait(timeout=15) == 0
    assert "Traceback" not in demo.stderr()


# Runs the demo's admin set-up in a fresh process under umask 0 and watches the password file at every
# file operation the process makes: if the file ever holds bytes while others may read it, that is told.
AUDITED_ADMIN_SETUP = r"""
import json, os, stat, sys
import django
os.umask(0)
target = os.path.join(os.environ["GANGWEB_VAR_DIR"], "demo-admin-password")
exposed, busy = [], []

def watch(event, args):
    if busy or event not in ("open", "os.chmod", "os.rename", "os.remove", "os.truncate", "os.utime"):
        return
    busy.append(1)
    try:
        st = os.stat(target)
        if st.st_size and st.st_mode & 0o077:
            exposed.append(f"{stat.filemode(st.st_mode)} with {st.st_size} bytes, at {event} {args[:1]}")
    except OSError:
        pass
    finally:
        busy.clear()

django.setup()
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
from gangweb.management.commands.demo import Command
sys.addaudithook(watch)
login = Command()._ensure_admin()
watch("open", ("end",))
print(json.dumps({"login": login, "exposed": exposed, "mode": stat.S_IMODE(os.stat(target).st_mode),
                  "content": open(target).read()}))
"""


def test_the_generated_password_file_is_private_before_it_holds_the_password(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", AUDITED_ADMIN_SETUP],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            **EMBEDDED_DEFAULTS,
            "GANGWEB_VAR_DIR": str(tmp_path),
            "DJANGO_SETTINGS_MODULE": "gangweb.settings",
        },
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["exposed"] == []
    assert seen["mode"] == 0o600
    password = seen["content"].strip()
    assert len(password) >= 16 and password in seen["login"]


@pytest.fixture
def deployment_database(tmp_path):
    """A database DATABASE_URL names, not the demo's: PostgreSQL when the run has it, else a SQLite file."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        yield f"sqlite:///{tmp_path / 'deployment.sqlite3'}"
        return
    import psycopg

    name = f"gangweb_demo_deploy_{uuid.uuid4().hex[:12]}"
    params = {
        "host": db.get("HOST") or "127.0.0.1",
        "port": db.get("PORT") or 5432,
        "user": db.get("USER"),
        "password": db.get("PASSWORD") or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**params) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    auth = db.get("USER") + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    try:
        yield f"postgres://{auth}@{params['host']}:{params['port']}/{name}"
    finally:
        with psycopg.connect(**params) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_on_a_database_url_the_demo_resets_no_password(start_demo, deployment_database, tmp_path):
    """The deployment's admin keeps its password, whatever GANGWEB_ADMIN_PASSWORD says."""
    env = {
        **os.environ,
        **EMBEDDED_DEFAULTS,
        "GANGWEB_DEMO": "",
        "DATABASE_URL": deployment_database,
        "GANGWEB_VAR_DIR": str(tmp_path / "var"),
    }
    manage(env, "migrate", "--verbosity", "0")
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "User.objects.create_superuser('admin', 'ops@example.com', 'the-deployments-own')",
    )
    users_before = manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "print(sorted(User.objects.values_list('username', 'password')))",
    )

    demo = start_demo(
        env={
            "GANGWEB_DEMO": "",
            "DATABASE_URL": deployment_database,
            "GANGWEB_ADMIN_PASSWORD": "reset-by-the-demo",
        },
        var_dir=tmp_path / "var",
    )
    assert demo.stop(signal.SIGTERM) == 0

    after = manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "print(sorted(User.objects.values_list('username', 'password')))",
    )
    assert after == users_before  # same users, same password hashes
    assert not (tmp_path / "var" / "demo-admin-password").exists()
    assert demo.password == "" and "not the demo's" in demo.login
