"""The wheel as an admin installs it: built from the checkout, installed into a fresh virtualenv, run by its
``gangweb`` command from a directory that is not the checkout, serving a page with its templates and
static files."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.slow

# What a build needs from the checkout (the rest, .venv and var/ above all, would only slow the copy).
SKIP = shutil.ignore_patterns(".git", ".venv", "var", "build", "*.egg-info", "__pycache__", "node_modules")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy: an in-tree build leaves build/ and *.egg-info in the checkout.
    source = tmp_path_factory.mktemp("source") / "gangweb"
    shutil.copytree(ROOT, source, ignore=SKIP)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "-w",
            out,
            source,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("gangweb-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv holding the wheel; its dependencies come from this one's site-packages through a
    path entry (a ``.pth`` line adds the directory, it does not run that directory's ``.pth`` files, so the
    checkout's editable install stays out)."""
    home = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", home], check=True, timeout=120)
    site = Path(
        subprocess.run(
            [home / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            home / "bin" / "python",
            "install",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            wheel,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return home


def test_the_wheel_holds_templates_and_static_files_and_no_scaffolding(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "gangweb/templates/dashboard/base.html" in names
    assert "gangweb/templates/drf_spectacular/redoc.html" in names
    assert "gangweb/static/dashboard/common.js" in names
    assert any(name.startswith("gangweb/static/vendor/") for name in names)
    assert not [
        name for name in names if name.startswith(("kubetestserver/", "bench/", "testkit/", "tests/"))
    ]
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    assert "gangweb = gangweb.command:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_gangweb_command_migrates_and_serves_a_page_outside_the_checkout(venv, tmp_path):
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GANGWEB_", "DJANGO_", "PYTHON"))},
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "DATABASE_URL": "",
        "REDIS_URL": "",
        "KUBECONFIG": "",
        "GANGWEB_DEMO": "1",
        "GANGWEB_CLUSTER": "simulated",
        "PYTHONUNBUFFERED": "1",
    }
    python, command = venv / "bin" / "python", venv / "bin" / "gangweb"

    where = subprocess.run(
        [python, "-c", "import gangweb, kubetestserver"], cwd=workdir, env=env, capture_output=True, text=True
    )
    assert "No module named 'kubetestserver'" in where.stderr
    where = subprocess.run(
        [python, "-c", "import gangweb; print(gangweb.__file__)"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv)

    # The benchmarks are scaffolding, left out of the wheel: the front door says where they run.
    bench = subprocess.run([command, "bench", "--help"], cwd=workdir, env=env, capture_output=True, text=True)
    assert bench.returncode == 1 and "run from a checkout" in bench.stderr, bench.stderr[-3000:]

    migrated = subprocess.run(
        [command, "migrate", "--noinput"], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    # The installed package keeps its state in the user's data directory, not beside its code.
    assert (tmp_path / "data" / "gangweb" / "gangweb.sqlite3").exists()

    port = free_port()
    proc = subprocess.Popen(
        [command, "demo", "--port", str(port)],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    try:
        seen, base_url, deadline = [], "", time.monotonic() + 120
        while not base_url and time.monotonic() < deadline and proc.poll() is None:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            seen.append(line)
            if match := re.search(r"running: (http://\S+?)/?$", line):
                base_url = match.group(1)
        assert base_url, "".join(seen)[-3000:]

        login = httpx.get(f"{base_url}/login/", timeout=10)
        assert login.status_code == 200 and "csrfmiddlewaretoken" in login.text
        page = httpx.get(f"{base_url}/", timeout=10)
        assert page.status_code == 200 and 'id="gpu-map"' in page.text
        scripts = re.findall(r'<script src="/static/([^"]+)"', page.text)
        assert "dashboard/common.js" in scripts
        for asset in scripts:
            assert httpx.get(f"{base_url}/static/{asset}", timeout=10).status_code == 200, asset
        redoc = httpx.get(f"{base_url}/api/redoc/", timeout=10)
        # gangweb's override of drf-spectacular's template (the element form), found before the library's own.
        assert redoc.status_code == 200 and "<redoc spec-url=" in redoc.text
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
