"""A local Kubernetes API server for tests, benchmarks and demos (test tooling): real paths and object
shapes, in-memory state.

In process::

    with KubeTestServer() as server:           # serves http://127.0.0.1:<free port>
        server.load_file("snapshot.yaml")
        server.write_kubeconfig(tmp_path / "kubeconfig")
        server.faults.fail_eviction("ns", "pod-a", 429, times=2)

In another process (e.g. for Celery workers, or to survive the test process' own restarts)::

    python -m kubetestserver --port 0 --load snapshot.yaml --kubeconfig kc.yaml

prints ``READY http://127.0.0.1:PORT`` once serving; ``ControlClient(url)`` then drives it.
``TestServerProcess`` wraps that for tests.
"""

from __future__ import annotations

import argparse
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from scheduler.engine.reading import read_snapshot

from .control import ControlClient, request_log
from .disruption import refresh_pdb_status
from .errors import ApiError
from .faults import Faults
from .httpapi import ApiState, make_handler
from .store import ObjectStore
from .validation import schema_validator


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type) -> None:
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # clients going away mid-request (dropped watches, killed workers) are normal here
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    def cut_connections(self) -> None:
        with self.connections_lock:
            for conn in list(self.connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def write_kubeconfig(path: str | Path, url: str, namespace: str = "default") -> Path:
    """A kubeconfig whose current context points the official client at ``url``."""
    path = Path(path)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gangweb-test", "cluster": {"server": url}}],
        "users": [{"name": "gangweb-test", "user": {"token": "gangweb-test-token"}}],
        "contexts": [
            {
                "name": "gangweb-test",
                "context": {"cluster": "gangweb-test", "user": "gangweb-test", "namespace": namespace},
            }
        ],
        "current-context": "gangweb-test",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class KubeTestServer:
    def __init__(
        self,
        store: ObjectStore | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        bookmark_interval: float = 5.0,
        validate_schemas: bool = False,
    ):
        """``validate_schemas`` refuses (422) objects that break the Kubernetes 1.37 schemas (strict)."""
        self.state = ApiState(store=store or ObjectStore(), bookmark_interval=bookmark_interval)
        if validate_schemas:
            self.state.store.validator = schema_validator()
        self._address = (host, port)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----- lifecycle
    def start(self) -> KubeTestServer:
        if self._httpd is None:
            self.state.stopping.clear()
            self._httpd = _HTTPServer(self._address, make_handler(self.state))
            # keep the port across restart(): clients reconnect to the same URL
            self._address = self._httpd.server_address[:2]
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.1},
                name="kube-testserver",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.state.stopping.set()
        self.state.store.wake_watchers()
        self._httpd.shutdown()
        self._httpd.cut_connections()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def restart(self) -> None:
        """Stop serving (every connection is cut) and serve again on the same port with the same state."""
        self.stop()
        self.start()

    def __enter__(self) -> KubeTestServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ----- addresses
    @property
    def port(self) -> int:
        return int(self._address[1])

    @property
    def url(self) -> str:
        return f"http://{self._address[0]}:{self.port}"

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        return write_kubeconfig(path, self.url, namespace)

    # ----- state and fault hooks (the same operations ControlClient offers over HTTP)
    @property
    def store(self) -> ObjectStore:
        return self.state.store

    @property
    def faults(self) -> Faults:
        return self.state.faults

    @property
    def bookmark_interval(self) -> float:
        return self.state.bookmark_interval

    @bookmark_interval.setter
    def bookmark_interval(self, seconds: float) -> None:
        self.state.bookmark_interval = seconds

    def load(self, objects: Iterable[dict]) -> int:
        created, _ = self.store.load(objects)
        refresh_pdb_status(self.store, only_missing=True)
        return created

    def load_file(self, path: str | Path) -> int:
        return self.load(d for d in read_snapshot(path) if isinstance(d, dict))

    def refresh_pdbs(self) -> int:
        """Recompute every PDB status from the pods, as the disruption controller would."""
        return refresh_pdb_status(self.store)

    def finish_terminating(self) -> int:
        return self.store.finish_terminating()

    def drop_watches(self) -> None:
        self.faults.drop_watches()

    def expire_watch_window(self) -> int:
        return self.store.compact()

    def requests(self, path_contains: str = "", method: str | None = None) -> list[dict[str, Any]]:
        return request_log(self.state, path_contains, method)

    def add_token(self, token: str, username: str, groups: list[str] | None = None, uid: str = "") -> dict:
        """TokenReview authenticates ``token`` as ``username`` (kubetestserver/reviews.py)."""
        return self.state.tokens.add(token, username, groups, uid)


class TestServerProcess:
    """Run the test server in a child process (context manager); ``.url``, ``.control``, ``.kubeconfig``."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        kubeconfig: str | Path,
        load: str | Path | None = None,
        port: int = 0,
        bookmark_interval: float = 5.0,
    ):
        self.kubeconfig = Path(kubeconfig)
        self._args = [
            sys.executable,
            "-m",
            "kubetestserver",
            "--port",
            str(port),
            "--kubeconfig",
            str(kubeconfig),
            "--bookmark-interval",
            str(bookmark_interval),
        ]
        if load:
            self._args += ["--load", str(load)]
        self.process: subprocess.Popen | None = None
        self.url = ""
        self.log_path: Path | None = None

    def start(self, timeout: float = 30.0) -> TestServerProcess:
        root = Path(__file__).resolve().parents[1]  # the repository: kubetestserver/ is at its top
        # stderr goes to a file: an unread pipe would block the server once its buffer fills
        self.log_path = self.kubeconfig.parent / f"{self.kubeconfig.name}.testserver.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self._args, stdout=subprocess.PIPE, stderr=log, text=True, cwd=root
            )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(
                f"test server did not start: {line.strip()!r} {self.log_path.read_text()[-2000:]}"
            )
        self.url = line.split()[1]
        return self

    @property
    def control(self) -> ControlClient:
        return ControlClient(self.url)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process and self.process.stdout:
            self.process.stdout.close()

    def __enter__(self) -> TestServerProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kubetestserver", description="Local Kubernetes API test server (in-memory)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--load", action="append", default=[], help="snapshot file (YAML/JSON) to load")
    parser.add_argument("--kubeconfig", help="write a kubeconfig pointing at this server here")
    parser.add_argument("--bookmark-interval", type=float, default=5.0)
    parser.add_argument("--validate", action="store_true", help="refuse objects that break the 1.37 schemas")
    args = parser.parse_args(argv)
    server = KubeTestServer(
        host=args.host,
        port=args.port,
        bookmark_interval=args.bookmark_interval,
        validate_schemas=args.validate,
    )
    try:
        for path in args.load:
            server.load_file(path)
    except (OSError, yaml.YAMLError, ValueError, ApiError) as exc:
        print(f"error: cannot load snapshot: {exc}", file=sys.stderr)
        return 2
    server.start()
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    print(f"READY {server.url}", flush=True)
    stop = threading.Event()
    import signal

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
