"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-scheduler, kube-controller-manager
and KWOK, built from the Go modules pinned beside this file (docs/kube.md).

    cluster.py build              build the binaries into the cache (nothing to do when they exist)
    cluster.py up [--state DIR] [--admission-config FILE] [--gates NAME=false,...]
                                  build, start, wait until served; the last line is KUBECONFIG=<path>
    cluster.py down [--state DIR] stop what ``up`` started in DIR

``make cluster`` and the test suite's ``real_cluster`` fixture both run ``up``, so there is one way to get a
cluster. The binaries live outside the repository in ``$GANGWEB_CLUSTER_CACHE`` (default
``~/.cache/gangweb/cluster``), one directory per set of pinned versions; the state (certificates, etcd's
data, logs, kubeconfig, process ids) lives in DIR (default ``var/cluster``).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

from admission.certs import issue_ca, issue_client, issue_serving  # noqa: E402

# (Go module directory, binary name, package path) in build order: etcd and KWOK first, they are quick.
BINARIES = [
    ("etcd", "etcd", "."),
    ("kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    ("kube", "kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
    ("kube", "kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
    ("kube", "kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    ("kube", "kubectl", "k8s.io/kubernetes/cmd/kubectl"),
]
PINS = {"kube": "k8s.io/kubernetes", "etcd": "go.etcd.io/etcd/server/v3", "kwok": "sigs.k8s.io/kwok"}
# KWOK's own stages (in its module): nodes become Ready and keep their lease, pods run, finish, go away.
KWOK_STAGES = [
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
]
# Gang scheduling (GenericWorkload: the Workload/PodGroup APIs, the GangScheduling plugin, PodGroup
# preemption), PodGroup-level preemption policy, CompositePodGroups (which need topology-aware workload
# scheduling) and PodGroup-level ResourceClaims (KEP-5729). DRA itself is GA and always on.
FEATURE_GATES = [
    "GenericWorkload",
    "PodGroupPreemptionPolicy",
    "TopologyAwareWorkloadScheduling",
    "CompositePodGroup",
    "DRAWorkloadResourceClaims",
]
RUNTIME_CONFIG = ["scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"]
# What each gate needs on (k8s.io/kubernetes pkg/features/kube_features.go,
# defaultKubernetesFeatureGateDependencies at v1.37.2): the components refuse to start otherwise, so a gate
# turned off with ``--gates`` turns off the gates that need it too.
GATE_NEEDS = {
    "CompositePodGroup": ("GenericWorkload", "TopologyAwareWorkloadScheduling"),
    "DRAWorkloadResourceClaims": ("GenericWorkload",),
    "PodGroupPreemptionPolicy": ("GenericWorkload",),
    "TopologyAwareWorkloadScheduling": ("GenericWorkload",),
    "WorkloadWithJob": ("GenericWorkload",),
}


def feature_gates(overrides: dict[str, bool] | None = None) -> dict[str, bool]:
    """``FEATURE_GATES`` on, then ``overrides``; a gate whose need is off is off."""
    gates = {gate: True for gate in FEATURE_GATES} | dict(overrides or {})
    changed = True
    while changed:
        changed = False
        for gate, needs in GATE_NEEDS.items():
            if gates.get(gate) and not all(gates.get(need) for need in needs):
                gates[gate] = False
                changed = True
    return gates


def parse_gates(text: str) -> dict[str, bool]:
    """``A=true,B=false`` (the components' own flag syntax) -> {A: True, B: False}."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or value.lower() not in ("true", "false") or not name:
            raise ClusterError(f"--gates {part!r}: write NAME=true or NAME=false")
        out[name] = value.lower() == "true"
    return out


# The node every cluster starts with; tests add their own the same way (kwok_node).
NODE = "kwok-node-0"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
READY_TIMEOUT = float(os.environ.get("GANGWEB_CLUSTER_TIMEOUT", "180"))
# Pods with this label are left Running by KWOK even when a Job owns them (KWOK's pod-complete stage finishes
# every Job's pods at once): a training Job's pods run until they are evicted.
KEEP_RUNNING_LABEL = "gangweb.io/kwok-keep-running"
# KWOK renews each node's lease; with thousands of nodes on a small machine it falls behind the controller
# manager's grace period and nodes turn Unknown. A longer lease (and grace) keeps large clusters Ready.
NODE_LEASE_SECONDS = int(os.environ.get("GANGWEB_CLUSTER_NODE_LEASE_SECONDS", "40"))
# kube-scheduler's and the controller manager's clients limit themselves to 50 and 20 requests a second by
# default (a real cluster's API server is shared); this one is theirs alone, and thousands of nodes loaded at
# once each need their not-ready taint removed by the controller manager: 1,000 seconds at 20 a second for
# 20,000 nodes. Unlimited in practice, as kwokctl's ``disableQPSLimits`` does.
CLIENT_QPS, CLIENT_BURST = 5000, 10000


class ClusterError(Exception):
    """What went wrong, in words an operator can act on (printed without a traceback)."""


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- build


def pinned(module: str) -> str:
    text = (HERE / module / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(PINS[module])} (v\S+)", text, re.MULTILINE)
    if not found:
        raise ClusterError(f"hack/cluster/{module}/go.mod does not pin {PINS[module]}")
    return found.group(1)


def version_key() -> str:
    return f"kubernetes-{pinned('kube')}_etcd-{pinned('etcd')}_kwok-{pinned('kwok')}"


def cache_dir() -> Path:
    base = os.environ.get("GANGWEB_CLUSTER_CACHE") or str(Path.home() / ".cache" / "gangweb" / "cluster")
    return Path(base) / version_key()


def bin_dir() -> Path:
    return cache_dir() / "bin"


def go() -> str:
    found = os.environ.get("GANGWEB_GO") or shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(found).exists() and not shutil.which(found):
        raise ClusterError(
            "no Go toolchain: install Go (go.mod of hack/cluster says which) or set GANGWEB_GO to its `go`"
        )
    return found


def ldflags(module: str) -> str:
    """Strip symbols; stamp Kubernetes' version as its release build does (`kubectl version` reads it)."""
    flags = ["-s", "-w"]
    if module == "kube":
        version = pinned("kube")
        major, minor = version.removeprefix("v").split(".")[:2]
        stamps = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [f"-X {package}.{name}={value}" for name, value in stamps.items()]
    return " ".join(flags)


def missing() -> list[tuple[str, str, str]]:
    return [b for b in BINARIES if not (bin_dir() / b[1]).is_file()]


def build() -> Path:
    """Build what the cache lacks (one builder at a time), then return the binaries' directory."""
    stages = cache_dir() / "kwok-stages.yaml"
    todo = missing()
    if not todo and stages.is_file():
        return bin_dir()
    bin_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        todo = missing()  # another builder may have finished them while we waited
        for module, name, package in todo:
            started = time.monotonic()
            say(f"building {name} ({module} module, {pinned(module)}); the first build takes long")
            scratch = Path(tempfile.mkdtemp(dir=cache_dir(), prefix=".build-"))
            done = subprocess.run(
                [
                    go(),
                    "build",
                    "-trimpath",
                    f"-ldflags={ldflags(module)}",
                    "-o",
                    str(scratch / name),
                    package,
                ],
                cwd=HERE / module,
                env={**os.environ, "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local"},
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                shutil.rmtree(scratch, ignore_errors=True)
                raise ClusterError(f"go build {package} failed:\n{done.stderr[-4000:]}")
            os.replace(scratch / name, bin_dir() / name)
            shutil.rmtree(scratch, ignore_errors=True)
            say(f"built {name} in {time.monotonic() - started:.0f} s")
        if not stages.is_file():
            source = Path(
                subprocess.run(
                    [go(), "list", "-m", "-f", "{{.Dir}}", PINS["kwok"]],
                    cwd=HERE / "kwok",
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
            )
            stages.write_text("\n---\n".join((source / part).read_text() for part in KWOK_STAGES))
    return bin_dir()


# ---------------------------------------------------------------------------------------------- up


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def certificates(pki: Path) -> None:
    """The cluster's CA, kube-apiserver's serving certificate, the administrator's client certificate
    (group system:masters: every component and test uses it) and the service-account signing key."""
    pki.mkdir(parents=True, exist_ok=True)
    ca = issue_ca("gangweb-cluster-ca", days=30)
    names = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
    serving = issue_serving(ca, names, days=30, ips=("127.0.0.1",))
    admin = issue_client(ca, "gangweb-admin", days=30, organization="system:masters")
    write(pki / "ca.crt", ca.cert_pem(), 0o644)
    write(pki / "ca.key", ca.key_pem())
    write(pki / "apiserver.crt", serving.cert_pem(), 0o644)
    write(pki / "apiserver.key", serving.key_pem())
    write(pki / "admin.crt", admin.cert_pem(), 0o644)
    write(pki / "admin.key", admin.key_pem())
    # kube-scheduler serves its /metrics on loopback with this one (``up``): a client checks it with ca.crt.
    scheduler = issue_serving(ca, ["kube-scheduler", "localhost"], days=30, ips=("127.0.0.1",))
    write(pki / "scheduler.crt", scheduler.cert_pem(), 0o644)
    write(pki / "scheduler.key", scheduler.key_pem())
    signer = ec.generate_private_key(ec.SECP256R1())
    write(
        pki / "sa.key",
        signer.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    write(
        pki / "sa.pub",
        signer.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        0o644,
    )


def kubeconfig(state: Path, server: str) -> Path:
    pki = state / "pki"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "gangweb", "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}
        ],
        "users": [
            {
                "name": "gangweb-admin",
                "user": {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            }
        ],
        "contexts": [{"name": "gangweb", "context": {"cluster": "gangweb", "user": "gangweb-admin"}}],
        "current-context": "gangweb",
    }
    return write(state / "kubeconfig", json.dumps(config, indent=2).encode())


class Cluster:
    """The processes of one state directory and the HTTPS client the readiness checks use."""

    def __init__(self, state: Path):
        self.state = state
        self.logs = state / "logs"
        self.record = state / "cluster.json"

    def load(self) -> dict:
        try:
            return json.loads(self.record.read_text())
        except (OSError, ValueError):
            return {}

    def save(self, data: dict) -> None:
        self.record.write_text(json.dumps(data, indent=2))

    def start(self, name: str, argv: list[str]) -> None:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 (the child keeps it)
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()
        data = self.load()
        data.setdefault("pids", {})[name] = process.pid
        self.save(data)

    def alive(self, name: str) -> bool:
        pid = self.load().get("pids", {}).get(name)
        if not pid:
            return False
        try:
            waited, _status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            waited = 0  # not our child (down from another process): ask the kernel
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            return not _zombie(pid)
        return waited == 0

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join((self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait(self, name: str, what: str, check) -> None:
        """Wait until ``check()`` is true while ``name`` runs; fail with its log otherwise."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if not self.alive(name):
                raise ClusterError(f"{name} exited before {what}; its log ends:\n{self.log_tail(name)}")
            try:
                if check():
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise ClusterError(
            f"{name}: {what} not within {READY_TIMEOUT:.0f} s; its log ends:\n{self.log_tail(name)}"
        )

    def https(self) -> ssl.SSLContext:
        pki = self.state / "pki"
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        return context

    def get(self, path: str) -> tuple[int, bytes]:
        url = self.load()["server"] + path
        try:
            with urllib.request.urlopen(url, context=self.https(), timeout=5) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def stop(self) -> None:
        """SIGTERM in reverse start order, SIGKILL what is still there after a grace period."""
        pids = self.load().get("pids", {})
        for name in reversed(list(pids)):
            pid = pids[name]
            try:
                os.killpg(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                continue
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self.alive(name):
                time.sleep(0.1)
            if self.alive(name):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if self.alive(name):
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
        data = self.load()
        data["pids"] = {}
        if data:
            self.save(data)


def node_object(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
        },
        "status": {
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
        },
    }


def kwok_stages(state: Path) -> Path:
    """KWOK's stages with the pod-complete stage leaving pods labelled ``KEEP_RUNNING_LABEL`` alone."""
    stages = (cache_dir() / "kwok-stages.yaml").read_text()
    complete = "  name: pod-complete\n"
    head, found, tail = stages.partition(complete)
    anchor = "    matchExpressions:\n"
    if not found or anchor not in tail:
        raise ClusterError(f"{cache_dir() / 'kwok-stages.yaml'} has no pod-complete stage with a selector")
    keep = f"    - key: '.metadata.labels.\"{KEEP_RUNNING_LABEL}\"'\n      operator: 'DoesNotExist'\n"
    # KWOK's client has no rate limit (kwok v0.8.0 pkg/utils/client); its stages and leases run 4 at a time by
    # default, too few for thousands of nodes reporting at once: 16 each.
    options = (
        "---\napiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n"
        "  nodePlayStageParallelism: 16\n  nodeLeaseParallelism: 16\n  podPlayStageParallelism: 16\n"
    )
    staged = head + found + tail.replace(anchor, anchor + keep, 1)
    return write(state / "kwok-stages.yaml", (staged.rstrip("\n") + "\n" + options).encode())


def up(state: Path, admission_config: Path | None = None, gates: dict[str, bool] | None = None) -> Path:
    """Start a cluster in ``state``; ``admission_config`` is kube-apiserver's AdmissionConfiguration file
    (``--admission-control-config-file``: e.g. the client certificate it presents to webhooks); ``gates``
    override ``FEATURE_GATES`` on every component (``feature_gates``)."""
    bins = build()
    if admission_config is not None and not admission_config.is_file():
        raise ClusterError(f"--admission-config {admission_config}: no such file")
    cluster = Cluster(state)
    if cluster.load().get("pids") and any(cluster.alive(n) for n in cluster.load()["pids"]):
        raise ClusterError(f"a cluster already runs from {state}: `cluster.py down --state {state}` first")
    if state.exists() and any(state.iterdir()):
        if not cluster.record.exists():
            raise ClusterError(f"{state} is not empty and holds no cluster: choose another --state")
        shutil.rmtree(state)
    state.mkdir(parents=True, exist_ok=True)
    cluster.logs.mkdir()
    pki = state / "pki"
    certificates(pki)
    etcd_port, peer_port, api_port, scheduler_port = free_port(), free_port(), free_port(), free_port()
    server = f"https://127.0.0.1:{api_port}"
    # kube-scheduler's metrics (docs/kube.md "kube-scheduler's metrics"): anyone on loopback may read /metrics.
    scheduler_metrics = f"https://127.0.0.1:{scheduler_port}/metrics"
    cluster.save(
        {"server": server, "schedulerMetrics": scheduler_metrics, "versions": version_key(), "pids": {}}
    )
    config = kubeconfig(state, server)
    gates = ",".join(f"{gate}={str(on).lower()}" for gate, on in sorted(feature_gates(gates).items()))
    # Every LIST the API server answers, with its client's user agent (audit.log, JSON lines): who lists
    # what, which the API server's own metrics do not say. Nothing else is audited.
    audit_policy = state / "audit-policy.yaml"
    audit_policy.write_text(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n"
        "- level: Metadata\n  verbs: [list]\n- level: None\n"
    )
    try:
        say(f"starting etcd on 127.0.0.1:{etcd_port}")
        etcd = f"http://127.0.0.1:{etcd_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        cluster.start(
            "etcd",
            [str(bins / "etcd"), "--name=gangweb", f"--data-dir={state / 'etcd'}"]
            + [f"--listen-client-urls={etcd}", f"--advertise-client-urls={etcd}"]
            + [f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}"]
            + [f"--initial-cluster=gangweb={peer}", "--unsafe-no-fsync", "--log-level=warn"],
        )
        cluster.wait("etcd", "healthy", lambda: _http_ok(f"{etcd}/health"))
        say(f"starting kube-apiserver on {server}")
        cluster.start(
            "kube-apiserver",
            [str(bins / "kube-apiserver"), f"--etcd-servers={etcd}", "--bind-address=127.0.0.1"]
            + [
                f"--secure-port={api_port}",
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
            ]
            + [f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}"]
            + [f"--client-ca-file={pki / 'ca.crt'}", "--authorization-mode=RBAC"]
            + [f"--service-account-key-file={pki / 'sa.pub'}"]
            + [f"--service-account-signing-key-file={pki / 'sa.key'}"]
            + [
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/16",
            ]
            + [f"--feature-gates={gates}", f"--runtime-config={','.join(RUNTIME_CONFIG)}"]
            + [f"--cert-dir={state / 'apiserver-certs'}", "--allow-privileged=true", "--v=1"]
            + [f"--audit-policy-file={audit_policy}", f"--audit-log-path={state / 'audit.log'}"]
            + ["--audit-log-mode=batch", "--audit-log-batch-max-wait=1s", "--audit-log-maxsize=200"]
            + ([f"--admission-control-config-file={admission_config}"] if admission_config else []),
        )
        cluster.wait("kube-apiserver", "ready (/readyz)", lambda: cluster.get("/readyz")[0] == 200)
        for name in ("kube-scheduler", "kube-controller-manager"):
            say(f"starting {name}")
            extra = (
                [f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}"]
                + ["--use-service-account-credentials=false", "--controllers=*"]
                + (
                    # A node KWOK has not reported yet is marked Unknown after the startup grace (1 m by
                    # default): thousands of nodes take KWOK longer than that to report the first time.
                    [
                        f"--node-monitor-grace-period={NODE_LEASE_SECONDS + 10}s",
                        f"--node-startup-grace-period={NODE_LEASE_SECONDS + 10}s",
                    ]
                    if NODE_LEASE_SECONDS > 40
                    else []
                )
                if name == "kube-controller-manager"
                else []
            )
            serving = (
                [f"--secure-port={scheduler_port}", "--bind-address=127.0.0.1"]
                + [
                    f"--tls-cert-file={pki / 'scheduler.crt'}",
                    f"--tls-private-key-file={pki / 'scheduler.key'}",
                ]
                + ["--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"]
                if name == "kube-scheduler"
                else ["--secure-port=0"]
            )
            cluster.start(
                name,
                [str(bins / name), f"--kubeconfig={config}", "--leader-elect=false", *serving]
                + [f"--feature-gates={gates}", "--v=1", *extra]
                + [f"--kube-api-qps={CLIENT_QPS}", f"--kube-api-burst={CLIENT_BURST}"],
            )
        say("starting kwok")
        cluster.start(
            "kwok",
            [str(bins / "kwok"), f"--kubeconfig={config}", f"--config={kwok_stages(state)}"]
            + ["--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake"]
            + [
                "--cidr=10.0.0.1/16",
                "--node-ip=10.0.0.1",
                f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
            ]
            + [f"--server-address=127.0.0.1:{free_port()}"],
        )
        kubectl = [str(bins / "kubectl"), f"--kubeconfig={config}"]
        subprocess.run(
            [*kubectl, "apply", "-f", "-"],
            input=json.dumps(node_object(NODE)),
            text=True,
            check=True,
            capture_output=True,
        )

        def node_ready() -> bool:
            status, body = cluster.get(f"/api/v1/nodes/{NODE}")
            conditions = json.loads(body).get("status", {}).get("conditions", []) if status == 200 else []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        cluster.wait("kwok", f"node {NODE} Ready", node_ready)
        # Pods need their namespace's ServiceAccount: the controller manager's token controllers run.
        cluster.wait(
            "kube-controller-manager",
            "the default ServiceAccount",
            lambda: cluster.get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
        )
        # Services get their IP from the default ServiceCIDR, made Ready by the API server after /readyz.
        cluster.wait("kube-apiserver", "the default ServiceCIDR Ready", service_cidr_ready(cluster))
        cluster.wait(
            "kube-scheduler", "serving /metrics", lambda: _https_ok(scheduler_metrics, pki / "ca.crt")
        )
    except (ClusterError, subprocess.CalledProcessError):
        cluster.stop()
        raise
    return config


def service_cidr_ready(cluster: Cluster):
    def ready() -> bool:
        status, body = cluster.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes")
        conditions = json.loads(body).get("status", {}).get("conditions", []) if status == 200 else []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    return ready


def _zombie(pid: int) -> bool:
    """Exited but not yet reaped (its parent, ``up``, is gone and init has not reaped it yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _https_ok(url: str, cafile: Path) -> bool:
    try:
        context = ssl.create_default_context(cafile=str(cafile))
        with urllib.request.urlopen(url, timeout=2, context=context) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status == 200
    except urllib.error.URLError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["build", "up", "down", "bin"])
    parser.add_argument(
        "--state", type=Path, default=Path(os.environ.get("GANGWEB_CLUSTER_STATE", ROOT / "var" / "cluster"))
    )
    parser.add_argument(
        "--admission-config",
        type=Path,
        help="kube-apiserver's AdmissionConfiguration file (up only), e.g. the webhooks' client certificates",
    )
    parser.add_argument(
        "--gates",
        default="",
        help="feature gates over the defaults, e.g. GenericWorkload=false (up only; gates that need an "
        "off gate are turned off too)",
    )
    args = parser.parse_args(argv)
    state = args.state.resolve()
    try:
        if args.command == "build":
            print(build())
        elif args.command == "bin":  # where the binaries are (no build)
            print(bin_dir())
        elif args.command == "up":
            started = time.monotonic()
            config = up(
                state,
                args.admission_config.resolve() if args.admission_config else None,
                parse_gates(args.gates),
            )
            say(f"cluster up in {time.monotonic() - started:.0f} s; state and logs in {state}")
            say(f"kubectl: {bin_dir() / 'kubectl'}; stop it with `make cluster-down`")
            print(f"KUBECONFIG={config}", flush=True)
        else:
            Cluster(state).stop()
            say(f"cluster of {state} stopped")
    except ClusterError as error:
        print(f"cluster: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
