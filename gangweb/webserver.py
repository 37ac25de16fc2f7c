"""Run gangweb's ASGI application in a uvicorn process of its own, as deploy/ serves it.

Benchmarks and tests that must meet the real server (sockets, TLS, several processes) start it here, so
there is one command line for "the web server" and it is the deployed one.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
GRACEFUL_SHUTDOWN_SECONDS = 10


def free_port() -> int:
    """A TCP port on loopback that nobody listens on at the moment of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command(port: int, *, tls: tuple[Path, Path] | None = None, access_log: bool = False) -> list[str]:
    """uvicorn's command line for ``gangweb.asgi:application`` on ``127.0.0.1:port``; ``tls`` is
    (key, certificate) when the server terminates TLS itself."""
    argv = [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port), "--lifespan", "off"]
    # As deploy/base/web.yaml: a websocket whose client stopped reading would hold the stop forever.
    argv += ["--timeout-graceful-shutdown", str(GRACEFUL_SHUTDOWN_SECONDS)]
    if tls is not None:
        key, cert = tls
        argv += ["--ssl-keyfile", str(key), "--ssl-certfile", str(cert)]
    if not access_log:
        argv.append("--no-access-log")
    return [*argv, "gangweb.asgi:application"]


def start(
    port: int,
    env: dict[str, str],
    *,
    log: IO[bytes] | int = subprocess.DEVNULL,
    tls: tuple[Path, Path] | None = None,
) -> subprocess.Popen[bytes]:
    """Start the server with ``env`` as its whole environment and return at once; see ``wait_listening``.

    ``log`` takes its stdout and stderr: a file or DEVNULL, never a pipe nobody reads (a chatty server
    would block on it).
    """
    return subprocess.Popen(command(port, tls=tls), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_listening(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 60) -> None:
    """Return once something accepts connections on ``127.0.0.1:port``; fail if ``proc`` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the web server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the web server did not listen on {port} in {timeout:.0f} s")
