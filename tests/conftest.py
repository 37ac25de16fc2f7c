"""Suite-wide fixtures: which real services the run uses, said in the header.

`make test` exports DATABASE_URL (PostgreSQL) and REDIS_URL (Redis) and GANGWEB_REQUIRE_SERVICES=1;
then a missing service is a failure, never a silent skip. A bare `pytest` falls back to SQLite and
skips the Redis tests with a reason.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest

from gangweb import webserver

ROOT = Path(__file__).resolve().parent.parent
# Subprocesses the tests start (servers, workers, CLI runs) read settings outside pytest; with
# DATABASE_URL/REDIS_URL set they are not the demo and need a key like any deployment.
os.environ.setdefault("SECRET_KEY", "gangweb-test-suite-only")
REQUIRE_SERVICES = os.environ.get("GANGWEB_REQUIRE_SERVICES") == "1" or os.environ.get("CI") == "true"


def tcp_reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _redis_status() -> tuple[str, bool]:
    url = os.environ.get("REDIS_URL", "")
    if not url:
        return "not configured (REDIS_URL unset)", False
    parsed = urlparse(url)
    ok = tcp_reachable(parsed.hostname or "127.0.0.1", parsed.port or 6379)
    return f"{url} ({'reachable' if ok else 'UNREACHABLE'})", ok


def _database_status() -> tuple[str, bool]:
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("postgresql"):
        ok = tcp_reachable(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432))
        return f"PostgreSQL {db.get('HOST')}:{db.get('PORT')} ({'reachable' if ok else 'UNREACHABLE'})", ok
    return f"{db['ENGINE'].rsplit('.', 1)[-1]} (set DATABASE_URL for PostgreSQL)", False


def pytest_report_header(config):
    database, _ = _database_status()
    redis_line, _ = _redis_status()
    return [
        f"gangweb services: database={database}; redis={redis_line}",
        f"gangweb services required: {REQUIRE_SERVICES} (CI={os.environ.get('CI', '')})",
    ]


def pytest_sessionstart(session):
    if not REQUIRE_SERVICES:
        return
    problems = []
    database, db_ok = _database_status()
    if not db_ok:
        problems.append(f"database: {database}")
    redis_line, redis_ok = _redis_status()
    if not redis_ok:
        problems.append(f"redis: {redis_line}")
    if problems:
        pytest.exit("real services required but missing: " + "; ".join(problems), returncode=3)


@pytest.fixture(autouse=True)
def _no_guessing_counts():
    """Each test starts with no guessing counts (gangweb/access/throttle.py): one test's wrong passwords
    must not hold back the next one's sign-in from the same address."""
    from gangweb.access import throttle

    throttle.clear()
    yield


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis URL that answers; skips (or, when services are required, fails) otherwise."""
    status, ok = _redis_status()
    if not ok:
        if REQUIRE_SERVICES:
            pytest.fail(f"Redis required: {status}")
        pytest.skip(f"Redis not available: {status}")
    url = os.environ["REDIS_URL"]
    from tests.scheduler.preemption.workers import claim_suite_database

    yield from claim_suite_database(url)


@pytest.fixture
def broker(redis_url):
    """A Redis database of its own for worker processes (broker, locks): claimed, emptied, released."""
    from tests.scheduler.preemption.workers import claim_broker

    yield from claim_broker(redis_url)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tcp_reachable("127.0.0.1", port, timeout=0.2):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def migrate_and_run(env: dict[str, str], script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``manage.py migrate``, then ``manage.py shell -c script``, in a process of their own with ``env``
    (a test's database and settings); a failure shows the end of what Django printed. Returns the shell's run."""
    done = None
    for command in (["migrate", "--verbosity", "0"], ["shell", "-c", script]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture
def asgi_server(tmp_path):
    """Start gangweb's ASGI application in a real server process (uvicorn, as deployed); yields its base URL.

    Extra environment can be passed through the returned factory: ``start(env={...})``; the server
    process of an address is ``start.processes[address]``.
    """
    procs: list[subprocess.Popen] = []

    def start(env: dict[str, str] | None = None) -> str:
        port = free_port()
        full_env = {
            **os.environ,
            "GANGWEB_VAR_DIR": str(tmp_path),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            **(env or {}),
        }
        proc = webserver.start(port, full_env, log=(tmp_path / f"uvicorn-{port}.log").open("wb"))
        procs.append(proc)
        wait_for_port(port, proc=proc)
        start.processes[f"127.0.0.1:{port}"] = proc
        return f"127.0.0.1:{port}"

    start.processes = {}
    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser_page(request):
    """A page in Debian's Chromium driven by Playwright; JavaScript errors collected in ``page.errors``.

    Without Chromium the test is skipped, or fails when services are required (`make test`, CI): the
    test command installs it, so its absence there is a broken machine, not a reason to skip.
    Playwright's ``wait_for_function`` evaluates its predicate with ``eval``, which the pages'
    Content-Security-Policy forbids, so the page ignores the policy unless the test is marked ``csp``
    (tests/gangweb/test_security_headers_browser.py: every page loads under its policy).
    """
    if not Path(CHROMIUM).exists():
        message = f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
        if REQUIRE_SERVICES:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(
                viewport={"width": 1500, "height": 1400},
                bypass_csp=request.node.get_closest_marker("csp") is None,
            )
            page.errors = []
            page.on("pageerror", lambda exc: page.errors.append(str(exc)))
            yield page
        finally:
            browser.close()


@pytest.fixture
def published(monkeypatch):
    """Live events as browsers would get them (only those whose transaction committed)."""
    sent: list[tuple[str, dict]] = []
    monkeypatch.setattr("gangweb.events._send", lambda event, payload: sent.append((event, payload)))
    return sent


class OwnRedis:
    """A ``redis-server`` of the test's own on a free port, without persistence: ``stop`` then ``start``
    brings it back empty, as the quickstart's Redis (no volume) comes back from a restart. Never the
    shared server, which other runs use."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> OwnRedis:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(self.directory)]
        log = (self.directory / f"redis-{self.port}.log").open("ab")
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, proc=self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def own_redis(tmp_path):
    """A started ``OwnRedis``, stopped after the test."""
    server = OwnRedis(tmp_path).start()
    yield server
    server.stop()


@dataclass(frozen=True)
class RealCluster:
    """A running control plane of hack/cluster (docs/kube.md): its kubeconfig, API URL and kubectl."""

    kubeconfig: Path
    server: str
    kubectl: str
    state: Path
    # kube-apiserver presents deploy/admission's client certificate to a webhook at 127.0.0.1:webhook_port;
    # the webhook's CA and pairs are in admission/certs (tests/realcluster/webhook.py).
    webhook_port: int = 0
    admission: Path | None = None

    @property
    def scheduler_metrics(self) -> str:
        """kube-scheduler's /metrics URL (HTTPS on loopback, its certificate signed by ``ca``)."""
        return str(json.loads((self.state / "cluster.json").read_text())["schedulerMetrics"])

    @property
    def ca(self) -> Path:
        return self.state / "pki" / "ca.crt"

    def run(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        """``kubectl <args>`` against this cluster; a failure says what kubectl said."""
        done = subprocess.run(
            [self.kubectl, f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}{done.stdout}")
        return done


CLUSTER_SCRIPT = ROOT / "hack" / "cluster" / "cluster.py"


@contextmanager
def started_cluster(state: Path, *options: str, webhook_port: int = 0, admission: Path | None = None):
    """``cluster.py up --state STATE OPTIONS`` as a RealCluster, stopped on exit; a cluster that cannot be
    built or started fails the test with the script's words."""
    script = [sys.executable, str(CLUSTER_SCRIPT)]
    done = subprocess.run([*script, "up", "--state", str(state), *options], capture_output=True, text=True)
    last = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
    try:
        if done.returncode != 0 or not last or not last[0].startswith("KUBECONFIG="):
            pytest.fail(
                f"hack/cluster/cluster.py up failed ({done.returncode}):\n{done.stderr[-6000:]}{done.stdout[-2000:]}",
                pytrace=False,
            )
        kubeconfig = Path(last[0].removeprefix("KUBECONFIG="))
        bins = subprocess.run([*script, "bin"], capture_output=True, text=True, check=True).stdout.strip()
        server = json.loads((state / "cluster.json").read_text())["server"]
        yield RealCluster(kubeconfig, server, str(Path(bins) / "kubectl"), state, webhook_port, admission)
    finally:
        subprocess.run([*script, "down", "--state", str(state)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory) -> RealCluster:
    """A real Kubernetes control plane with KWOK nodes, started by `make cluster`'s own script. A cluster
    that cannot be built or started fails the test with the script's words: these tests are never skipped."""
    from tests.realcluster.webhook import admission_files

    state = tmp_path_factory.mktemp("cluster")
    admission = tmp_path_factory.mktemp("admission")
    webhook_port = free_port()
    config = admission_files(admission, webhook_port)
    with started_cluster(
        state, "--admission-config", str(config), webhook_port=webhook_port, admission=admission
    ) as cluster:
        yield cluster
