"""Real worker processes for the pipeline's fault tests: a Redis database of their own, a Celery worker
started and killed as a process group, the Kubernetes API test server in its own process.

The fixtures (``broker``, ``api_server``) are registered in this package's conftest.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from urllib.parse import urlparse, urlunparse

import pytest
from django.db import connection

from kubetestserver import TestServerProcess
from tests.conftest import ROOT

CLAIM_KEY = "gangweb:test:claimed-by"
# Set in the database a test run itself uses (its REDIS_URL), so that no other run claims it as a broker.
SUITE_KEY = "gangweb:test:suite-of"


def claim_broker(redis_url):
    """A Redis database of its own for the worker (broker, locks): claimed, emptied, released.

    Test runs of other sessions may share the Redis server; a worker consuming another run's queue
    would look for rows in the wrong database. So each run claims a free database number (SET NX).
    """
    import redis

    parsed = urlparse(redis_url)
    suite_db = int((parsed.path or "/0").strip("/") or 0)
    token = f"{os.getpid()}-{time.time()}"
    for number in range(14, 0, -1):
        if number == suite_db:
            continue
        url = urlunparse(parsed._replace(path=f"/{number}"))
        client = redis.Redis.from_url(url)
        if client.exists(SUITE_KEY):
            continue
        if client.set(CLAIM_KEY, token, nx=True, ex=600):
            for key in client.scan_iter():
                if key.decode() != CLAIM_KEY:
                    client.delete(key)
            yield url
            client.flushdb()
            return
    pytest.fail("no free Redis database number for the worker (all of 1-14 are claimed)")


def claim_suite_database(redis_url):
    """Mark the run's own Redis database as in use while the run lasts: another run's ``claim_broker``
    would otherwise empty it under this run's feet."""
    import redis

    client = redis.Redis.from_url(redis_url)
    token = f"{os.getpid()}-{time.time()}"
    client.set(SUITE_KEY, token, ex=4 * 3600)
    try:
        yield redis_url
    finally:
        try:
            if client.get(SUITE_KEY) == token.encode():
                client.delete(SUITE_KEY)
        except redis.RedisError:
            pass  # a test stopped Redis: the key goes with its expiry


def postgres_url_for_test_db() -> str:
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip(
            "the crash test needs PostgreSQL (set DATABASE_URL): a worker process must share the database"
        )
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    """``beat_schedule``: a file path, to run beat inside the worker (``-B``; its periodic tasks with it)."""

    def __init__(self, env: dict[str, str], log_path, concurrency: int = 1, beat_schedule=None):
        self.env, self.log_path, self.proc, self.concurrency = env, log_path, None, concurrency
        self.beat = ["-B", "-s", str(beat_schedule)] if beat_schedule else []

    def start(self) -> Worker:
        self.log = open(self.log_path, "ab")  # noqa: SIM115 (lives as long as the worker; closed in stop())
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "gangweb",
                "worker",
                *self.beat,
                "--pool=prefork",
                f"--concurrency={self.concurrency}",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def kill(self) -> None:
        """SIGKILL the whole process group: the main process and its pool child, no goodbye."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # warm shutdown: the main process stops its pool itself
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def wait_until(predicate, timeout: float, what: str, worker_log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    log = worker_log.read_text()[-4000:] if worker_log and worker_log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n--- worker log ---\n{log}")


def run_api_server(tmp_path):
    with TestServerProcess(tmp_path / "kubeconfig") as server:
        yield server


def real_evictions(server, pod: str) -> list[int]:
    """HTTP codes of the non-dry-run eviction POSTs the API server received for a pod."""
    namespace, name = pod.split("/")
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
    return [
        r["code"] for r in server.control.requests(path, method="POST") if "dryRun" not in (r["query"] or "")
    ]


def worker_env(api_server, broker: str, **extra: str) -> dict[str, str]:
    """The environment of a worker that executes against ``api_server`` with the test database."""
    return {
        **os.environ,
        "DATABASE_URL": postgres_url_for_test_db(),
        "REDIS_URL": broker,
        "KUBECONFIG": str(api_server.kubeconfig),
        "GANGWEB_CLUSTER": "kube",
        "SECRET_KEY": "worker-test",
        "GANGWEB_DEMO": "0",
        **extra,
    }


class Gate:
    """A TCP forwarder to ``host:port`` that a test closes for a moment: closed, it drops the connections
    it carries and closes each new one at once, as a database that went away looks to its clients. The
    shared server behind it is never touched."""

    def __init__(self, host: str, port: int) -> None:
        import socket
        import threading

        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open = True
        self._lock = threading.Lock()
        self._carried: list = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # stopped
            if not self.open:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._carried += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, sink) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.close()
                except OSError:
                    pass

    def close(self) -> None:
        import socket

        self.open = False
        with self._lock:
            carried, self._carried = self._carried, []
        for end in carried:
            try:
                end.shutdown(socket.SHUT_RDWR)
                end.close()
            except OSError:
                pass

    def reopen(self) -> None:
        self.open = True

    def stop(self) -> None:
        self.close()
        self.listener.close()
