"""A real Kueue controller on hack/cluster's control plane, built from Kueue's own Go module (pinned below).

    kueue.py build                 build the controller into the cache (nothing to do when it exists)
    kueue.py bin                   print the binary's path (exit 1 when it is not built)
    kueue.py up --kubeconfig K --state DIR
                                   apply Kueue's CRDs, start the controller, wait until it is ready
    kueue.py down --state DIR      stop what ``up`` started in DIR

The smallest honest setup (docs/queues.md "Against a real Kueue"): Kueue's CRDs from its module as
published, its controller for ``batch/job`` only, no leader election, no visibility server, and no webhook
registered with the API server (Jobs are created suspended, which Kueue's webhook would otherwise do).
Kueue still serves its webhook port and reads a metrics certificate from a fixed path
(``/etc/kueue/metrics/certs``): both certificates are issued here, and the controller runs in a private
mount namespace whose ``/etc`` is an overlay holding that one directory, so nothing outside DIR is written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from admission.certs import issue_ca, issue_serving  # noqa: E402

MODULE = "sigs.k8s.io/kueue"
VERSION = "v0.17.0"
CACHE = Path(os.environ.get("GANGWEB_KUEUE_CACHE", Path.home() / ".cache" / "gangweb" / "kueue")) / VERSION
BINARY = CACHE / "kueue"
NAMESPACE = "kueue-system"
READY_TIMEOUT = float(os.environ.get("GANGWEB_KUEUE_TIMEOUT", "180"))


class KueueError(RuntimeError):
    pass


def module_dir() -> Path:
    """Kueue's module as the Go module proxy serves it (downloaded and checked against go.sum's database)."""
    done = subprocess.run(
        ["go", "mod", "download", "-json", f"{MODULE}@{VERSION}"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise KueueError(
            f"go mod download {MODULE}@{VERSION} failed:\n{done.stderr[-2000:]}{done.stdout[-2000:]}"
        )
    return Path(json.loads(done.stdout)["Dir"])


def build() -> Path:
    """The controller binary, built once from the module's own go.mod and go.sum (one package at a time:
    the machine is shared)."""
    if BINARY.exists():
        return BINARY
    source = module_dir()
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = BINARY.with_suffix(".partial")
    env = {**os.environ, "GOFLAGS": "-p=1 -mod=readonly -buildvcs=false", "GOTOOLCHAIN": "local"}
    started = time.monotonic()
    done = subprocess.run(
        ["go", "build", "-trimpath", "-o", str(partial), "./cmd/kueue"],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise KueueError(f"go build {MODULE}/cmd/kueue failed:\n{done.stderr[-4000:]}")
    partial.rename(BINARY)
    print(f"built {BINARY} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return BINARY


def crds() -> list[Path]:
    return sorted((module_dir() / "config" / "components" / "crd" / "bases").glob("*.yaml"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pair(directory: Path, ca) -> None:
    pair = issue_serving(ca, ["localhost"], 2, ips=("127.0.0.1",))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_bytes(pair.cert_pem())
    (directory / "tls.key").write_bytes(pair.key_pem())


def configuration(state: Path, webhook_port: int, health_port: int) -> Path:
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(state / "webhook-certs")},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": ["batch/job"]},
    }
    path = state / "config.yaml"
    path.write_text(json.dumps(config))
    return path


def kubectl_binary() -> str:
    """hack/cluster's kubectl (the control plane's own version), else the one on PATH."""
    bins = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster" / "cluster.py"), "bin"], capture_output=True, text=True
    ).stdout.strip()
    return str(Path(bins) / "kubectl") if bins else "kubectl"


def kubectl(tool: str, kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(
        [tool, f"--kubeconfig={kubeconfig}", *args], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise KueueError(f"kubectl {' '.join(args[:3])} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def up(kubeconfig: Path, state: Path) -> int:
    """Apply the CRDs, start the controller, wait for its readiness probe; returns its process id."""
    binary = build()
    state.mkdir(parents=True, exist_ok=True)
    tool, files = kubectl_binary(), crds()
    kubectl(
        tool, kubeconfig, "apply", "--server-side", "--force-conflicts", *(f"--filename={f}" for f in files)
    )
    names = [f"crd/{'.'.join(reversed(f.stem.split('_', 1)))}" for f in files]  # kueue.x-k8s.io_workloads
    kubectl(tool, kubeconfig, "wait", "--for=condition=Established", "--timeout=120s", *names)
    if not kubectl(
        tool, kubeconfig, "get", "namespace", NAMESPACE, "--ignore-not-found", "-o", "name"
    ).strip():
        kubectl(tool, kubeconfig, "create", "namespace", NAMESPACE)
    ca = issue_ca("gangweb kueue test CA", 2)
    _pair(state / "webhook-certs", ca)
    _pair(state / "etc-upper" / "kueue" / "metrics" / "certs", ca)
    (state / "etc-work").mkdir(exist_ok=True)
    health_port = free_port()
    config = configuration(state, free_port(), health_port)
    overlay = f"lowerdir=/etc,upperdir={state / 'etc-upper'},workdir={state / 'etc-work'}"
    script = f'mount -t overlay overlay -o "{overlay}" /etc && exec "$0" "$@"'
    log = (state / "kueue.log").open("ab")
    process = subprocess.Popen(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            str(binary),
            f"--config={config}",
            "--feature-gates=VisibilityOnDemand=false",
            "--zap-log-level=info",
        ],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    (state / "kueue.pid").write_text(str(process.pid))
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise KueueError(f"kueue exited ({process.returncode}):\n{_tail(state)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    return process.pid
        except OSError:
            pass
        time.sleep(0.5)
    down(state)
    raise KueueError(f"kueue not ready after {READY_TIMEOUT:.0f} s:\n{_tail(state)}")


def _tail(state: Path) -> str:
    path = state / "kueue.log"
    return path.read_text(errors="replace")[-4000:] if path.exists() else ""


def down(state: Path) -> None:
    pid_file = state / "kueue.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    else:
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    pid_file.unlink()
    shutil.rmtree(state / "etc-work", ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build")
    sub.add_parser("bin")
    start = sub.add_parser("up")
    start.add_argument("--kubeconfig", type=Path, required=True)
    start.add_argument("--state", type=Path, default=ROOT / "var" / "kueue")
    stop = sub.add_parser("down")
    stop.add_argument("--state", type=Path, default=ROOT / "var" / "kueue")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
        elif args.command == "bin":
            if not BINARY.exists():
                print(f"not built: {BINARY}", file=sys.stderr)
                return 1
            print(BINARY)
        elif args.command == "up":
            print(f"KUEUE_PID={up(args.kubeconfig, args.state)}")
        else:
            down(args.state)
    except KueueError as exc:
        print(f"kueue.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
