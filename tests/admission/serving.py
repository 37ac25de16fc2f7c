"""A real ``webhook serve`` process for tests, and TLS clients that verify it as kube-apiserver does."""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from admission import certs

ROOT = Path(__file__).resolve().parents[2]
SERVICE, NAMESPACE = "gangweb-webhook", "gangweb-system"
HOSTNAME = f"{SERVICE}.{NAMESPACE}.svc"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the probe is closed


def tls_context(ca_pem: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca_pem.decode())


class ServiceConnection(http.client.HTTPSConnection):
    """Dials 127.0.0.1 and verifies the certificate for the Service name, as kube-apiserver does; like any
    HTTPSConnection it connects again by itself after the server closed the connection."""

    def __init__(
        self, port: int, context: ssl.SSLContext, hostname: str = HOSTNAME, timeout: float = 10
    ) -> None:
        super().__init__("127.0.0.1", port, context=context, timeout=timeout)
        self.service_hostname = hostname

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), self.timeout)
        # http.client writes the headers and the body separately: without this, Nagle's algorithm holds
        # the body until the server's delayed ACK (40 ms a request), as Go's client (NODELAY) never does.
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.service_hostname)


class Server:
    def __init__(
        self, directory: Path, port: int, process: subprocess.Popen, client: tuple[Path, Path] | None = None
    ):
        self.directory, self.port, self.process = directory, port, process
        self.client = client  # (certificate, key) this test client presents, if any

    def ca(self) -> bytes:
        return (self.directory / certs.CA_CERT).read_bytes()

    def connection(
        self,
        ca_pem: bytes | None = None,
        hostname: str = HOSTNAME,
        client: tuple[Path, Path] | bool | None = True,
        timeout: float = 10,
    ) -> ServiceConnection:
        """A verified TLS connection, connected; ``client``: True for the server's default client certificate,
        None for none, or a (certificate, key) pair."""
        context = tls_context(ca_pem or self.ca())
        client = self.client if client is True else client
        if client:
            context.load_cert_chain(*client)
        connection = ServiceConnection(self.port, context, hostname, timeout)
        connection.connect()
        return connection

    def post(self, path: str, body: bytes, connection=None, headers=None) -> tuple[int, dict]:
        connection = connection or self.connection()
        connection.request("POST", path, body=body, headers=headers or {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())


def start_server(
    directory: Path,
    *args: str,
    workers: int = 2,
    env: dict | None = None,
    ready_path: str = "/healthz",
    client: tuple[Path, Path] | None = None,
) -> Server:
    """``webhook serve`` on a free port, with DATABASE_URL and REDIS_URL at closed ports; returns once
    ``ready_path`` answers 200 (over a connection presenting ``client``, a certificate and key, if given)."""
    port = closed_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed_port()}/gangweb",
        "REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
        "SECRET_KEY": "test-only",
        "GANGWEB_DEMO": "0",
        **(env or {}),
    }
    # A file, not a pipe: a pipe nobody reads fills up (64 KiB) and then blocks the server mid-log.
    log = (directory / "server.log").open("ab")
    process = subprocess.Popen(
        # --cert/--key as deploy/base/webhook.yaml passes them.
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "webhook",
            "serve",
            "--cert",
            str(directory / "tls.crt"),
            "--key",
            str(directory / "tls.key"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            *args,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    log.close()
    handle = Server(directory, port, process, client)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            pytest.fail(f"server exited: {(directory / 'server.log').read_text(errors='replace')[-3000:]}")
        try:
            connection = handle.connection()
            connection.request("GET", ready_path)
            if connection.getresponse().status == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_server(handle)
            pytest.fail(
                f"{ready_path} never answered 200: {(directory / 'server.log').read_text(errors='replace')[-3000:]}"
            )
        time.sleep(0.2)
    return handle


def stop_server(handle: Server) -> None:
    handle.process.terminate()
    handle.process.wait(timeout=15)


def read_until_closed(tls: ssl.SSLSocket, limit: float = 60.0) -> bytes:
    """Everything the server sends until it closes the connection; fails if it is still open after ``limit``
    seconds (a bound for a loaded machine, far above the server's read timeout)."""
    tls.settimeout(limit)
    received = b""
    try:
        while chunk := tls.recv(65536):
            received += chunk
    except (ssl.SSLZeroReturnError, ConnectionResetError):
        pass  # closed, with or without close_notify
    except TimeoutError:
        pytest.fail(f"the server still holds the connection after {limit} s (received {received[:200]!r})")
    return received
