"""The real control plane for the benchmarks: start it, load a synthetic cluster into it, watch it.

``bench native`` and ``bench watch --server real`` both run Kubernetes' own kube-apiserver, kube-scheduler,
kube-controller-manager and KWOK, started by ``hack/cluster/cluster.py`` (the one way to get that cluster,
docs/kube.md). The synthetic cluster of ``testkit.synthetic`` is created through the API in the
shapes the real server accepts: KWOK's annotation on each node, no uids, statuses or priorities on create
(the Priority admission computes them), the running pods bound by ``nodeName`` and their start times
patched afterwards so that every pod has run as long as the synthetic cluster says.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import urllib3
import yaml

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_SCRIPT = ROOT / "hack" / "cluster" / "cluster.py"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
GANG_LABEL = "gangweb.io/bench-gang"
PREEMPTION_POLICY_ANNOTATION = "gangweb.io/preemption-policy"
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1"
# Parallel creates (and keep-alive connections) of the loader. The server's time per create is mostly waiting
# (etcd, admission, the watch fan-out), so more requests in flight create faster until a core is busy.
CONNECTIONS = 48
PROGRESS_SECONDS = 15.0
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


class RealServerError(RuntimeError):
    """The control plane did not start, or refused the benchmark's objects."""


def exit_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C: the worker is stopped and the control plane brought down."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


class ControlPlane:
    """One ``cluster.py up --state DIR`` ... ``down`` (a context manager); ``client`` talks to it."""

    def __init__(self, state: Path, env: dict[str, str] | None = None):
        self.state = state
        self.env = {**os.environ, **(env or {})}
        self.kubeconfig: Path | None = None
        self.client: Client | None = None

    def __enter__(self) -> ControlPlane:
        done = subprocess.run(
            [sys.executable, str(CLUSTER_SCRIPT), "up", "--state", str(self.state)],
            capture_output=True,
            text=True,
            env=self.env,
        )
        last = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
        if done.returncode != 0 or not last or not last[0].startswith("KUBECONFIG="):
            subprocess.run(
                [sys.executable, str(CLUSTER_SCRIPT), "down", "--state", str(self.state)], check=False
            )
            raise RealServerError(f"hack/cluster/cluster.py up failed:\n{done.stderr[-3000:]}")
        self.kubeconfig = Path(last[0].removeprefix("KUBECONFIG="))
        self.client = Client.from_kubeconfig(self.kubeconfig)
        return self

    def memory(self) -> dict[str, dict[str, float]]:
        """Each component's resident memory now and its peak so far (MiB; ``/proc``'s VmRSS and VmHWM)."""
        pids = json.loads((self.state / "cluster.json").read_text()).get("pids", {})
        out = {}
        for name, pid in pids.items():
            try:
                status = Path(f"/proc/{pid}/status").read_text().splitlines()
            except OSError:
                continue
            fields = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith("Vm")}
            out[name] = {
                "rss_mib": round(fields.get("VmRSS", 0) / 1024, 1),
                "peak_mib": round(fields.get("VmHWM", 0) / 1024, 1),
            }
        return out

    def __exit__(self, *exc: object) -> None:
        subprocess.run(
            [sys.executable, str(CLUSTER_SCRIPT), "down", "--state", str(self.state)],
            capture_output=True,
            timeout=120,
            check=False,
        )


class Client:
    """Raw JSON over the kubeconfig's client certificate, thread-safe (one pool of keep-alive connections,
    no client-side rate limit: the loader's throughput is the server's)."""

    def __init__(self, server: str, ca: str, cert: str, key: str, connections: int = CONNECTIONS):
        self.server = server.rstrip("/")
        self.connections = connections
        self.http = urllib3.PoolManager(
            maxsize=connections, block=True, ca_certs=ca, cert_file=cert, key_file=key, retries=False
        )

    @classmethod
    def from_kubeconfig(cls, path: Path, connections: int = CONNECTIONS) -> Client:
        config = yaml.safe_load(path.read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        return cls(
            cluster["server"],
            cluster["certificate-authority"],
            user["client-certificate"],
            user["client-key"],
            connections,
        )

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> tuple:
        answer = self.http.request(
            method,
            self.server + path,
            body=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": content_type, "Accept": accept},
            timeout=urllib3.Timeout(connect=5, read=60),
        )
        data = answer.data
        try:
            return answer.status, json.loads(data) if data else {}
        except ValueError:
            return answer.status, {"raw": data.decode(errors="replace")}

    def ok(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> dict:
        status, data = self.call(method, path, body, content_type, accept)
        if status >= 300:
            raise RealServerError(f"{method} {path}: {status} {data.get('message', data)}")
        return data

    def merge_patch(self, path: str, body: dict) -> dict:
        return self.ok("PATCH", path, body, "application/merge-patch+json")

    def list_lists(self) -> dict[str, float]:
        """The API server's own count of LIST requests so far, per resource (its /metrics)."""
        answer = self.http.request(
            "GET", self.server + "/metrics", timeout=urllib3.Timeout(connect=5, read=60)
        )
        counts: dict[str, float] = {}
        for line in answer.data.decode().splitlines():
            if line.startswith("apiserver_request_total{") and 'verb="LIST"' in line:
                resource = re.search(r'resource="([^"]*)"', line)
                name = resource.group(1) if resource else ""
                counts[name] = counts.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        return counts


def lists_between(before: dict[str, float], after: dict[str, float], resources: Iterable[str]) -> int:
    return int(sum(after.get(r, 0.0) - before.get(r, 0.0) for r in resources))


def audited_lists(state: Path, since: float, until: float) -> dict[str, int]:
    """The LISTs the control plane's audit log holds between two ``time.time()`` moments, by who asked
    and what: ``"<user agent's program> <user> <resource>" -> count`` (``hack/cluster/cluster.py`` audits
    every LIST; the log is written within a second, so wait that long after ``until``)."""
    counts: dict[str, int] = {}
    try:
        lines = (state / "audit.log").read_text(errors="replace").splitlines()
    except OSError:
        return counts
    for line in lines:
        try:
            event = json.loads(line)
            at = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError, AttributeError):
            continue
        if event.get("verb") != "list" or not since <= at < until:
            continue
        agent = (event.get("userAgent") or "?").split("/", 1)[0].split(" ", 1)[0]
        user = (event.get("user") or {}).get("username", "?")
        resource = (event.get("objectRef") or {}).get("resource", "?")
        key = f"{agent} {user} {resource}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def path_of(obj: dict[str, Any], *, collection: bool = False) -> str:
    """The API path of ``obj`` (or of its collection) for the kinds the benchmarks create."""
    kind, meta = obj["kind"], obj["metadata"]
    ns = meta.get("namespace")
    base = {
        "Node": "/api/v1/nodes",
        "Namespace": "/api/v1/namespaces",
        "Pod": f"/api/v1/namespaces/{ns}/pods",
        "PodGroup": f"{PODGROUPS}/namespaces/{ns}/podgroups",
        "PodDisruptionBudget": f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
        "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    }[kind]
    return base if collection else f"{base}/{meta['name']}"


def real_shape(obj: dict[str, Any], *, enforce: bool, preemptor_class: str) -> dict[str, Any]:
    """``obj`` of the synthetic cluster as created on the real server (see the module's docstring).

    ``enforce``: gangweb preempts, so the preemptor's PriorityClass keeps kube-scheduler out (``Never``) and
    its PodGroups say so too (the Priority admission wants the class's policy) while gangweb's annotation
    says it preempts, as gangweb's PodGroup ensurer writes them. Otherwise the class preempts
    (``PreemptLowerPriority``) and kube-scheduler's own workload-aware preemption does the work."""
    out = json.loads(json.dumps(obj))
    meta, kind = out["metadata"], out["kind"]
    for key in ("uid", "creationTimestamp", "resourceVersion"):
        meta.pop(key, None)
    if kind == "Node":
        meta.setdefault("annotations", {})[KWOK_ANNOTATION] = "fake"
        meta["labels"]["type"] = "kwok"
        out["status"].pop("conditions", None)
    elif kind == "PriorityClass" and meta["name"] == preemptor_class:
        out["preemptionPolicy"] = "Never" if enforce else "PreemptLowerPriority"
    elif kind == "PodGroup":
        out["spec"].pop("priority", None)
        if out["spec"].get("priorityClassName") == preemptor_class:
            meta.setdefault("annotations", {})[PREEMPTION_POLICY_ANNOTATION] = "PreemptLowerPriority"
            if enforce:
                out["spec"]["preemptionPolicy"] = "Never"
    elif kind == "PodDisruptionBudget":
        out.pop("status", None)
    elif kind == "Pod":
        out.pop("status", None)
        out["spec"].pop("priority", None)
        for container in out["spec"]["containers"]:  # extended resources need limits equal to requests
            requests = container.get("resources", {}).get("requests", {})
            if "nvidia.com/gpu" in requests:
                container["resources"]["limits"] = {"nvidia.com/gpu": requests["nvidia.com/gpu"]}
        group = out["spec"].get("schedulingGroup", {}).get("podGroupName")
        if group and not out["spec"].get("nodeName"):
            meta["labels"][GANG_LABEL] = group
    return out


def create_all(client: Client, objects: list[dict[str, Any]], what: str, workers: int | None = None) -> float:
    """POST every object (409s taken as created), as many at once as the client has connections; a progress
    line every ``PROGRESS_SECONDS`` while it lasts (tens of thousands of pods take minutes). The seconds taken."""
    if not objects:
        return 0.0
    started = last = time.monotonic()

    def create(obj: dict[str, Any]) -> None:
        status, data = client.call("POST", path_of(obj, collection=True), obj)
        if status == 409:
            return
        if status >= 300:
            raise RealServerError(
                f"creating {obj['kind']} {obj['metadata']['name']}: {status} {data.get('message')}"
            )

    pool = ThreadPoolExecutor(workers or client.connections)
    try:
        for done, future in enumerate(as_completed([pool.submit(create, o) for o in objects]), 1):
            future.result()
            if time.monotonic() - last >= PROGRESS_SECONDS and done < len(objects):
                last = time.monotonic()
                rate = done / (last - started)
                progress(f"created {done:,} of {len(objects):,} {what} ({rate:,.0f}/s)")
    finally:  # stopped (Ctrl-C, SIGTERM, a refusal): the creates not yet started are dropped, not waited for
        pool.shutdown(wait=True, cancel_futures=True)
    took = time.monotonic() - started
    progress(f"created {len(objects):,} {what} in {took:.1f} s ({len(objects) / max(took, 1e-3):,.0f}/s)")
    return took


def wait(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise RealServerError(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_count(
    count: Callable[[], int], wanted: int, timeout: float, what: str, interval: float = 5.0
) -> float:
    """Wait until ``count()`` reaches ``wanted``, a progress line every ``PROGRESS_SECONDS`` meanwhile; the
    seconds it took."""
    started = last = time.monotonic()
    while (now := count()) < wanted:
        if time.monotonic() - started > timeout:
            raise RealServerError(
                f"timed out after {timeout:.0f} s waiting for {what} ({now:,} of {wanted:,})"
            )
        if time.monotonic() - last >= PROGRESS_SECONDS:
            last = time.monotonic()
            progress(f"{now:,} of {wanted:,} {what} ({last - started:.0f} s)")
        time.sleep(interval)
    took = time.monotonic() - started
    progress(f"{wanted:,} {what} after {took:.1f} s")
    return took


def list_all(client: Client, path: str, selector: str = "") -> list[dict[str, Any]]:
    items, token = [], ""
    while True:
        query = f"?limit=500&labelSelector={selector}" + (f"&continue={token}" if token else "")
        data = client.ok("GET", path + query)
        items += data["items"]
        token = data["metadata"].get("continue")
        if not token:
            return items


def table_cells(client: Client, path: str, query: str, column: str) -> list[str]:
    """One column of a collection as the server's Table (what ``kubectl get`` prints): a few dozen bytes an
    object instead of the object, so polling 20,000 nodes or 40,000 pods costs the server little."""
    cells: list[str] = []
    token = ""
    while True:
        data = client.ok(
            "GET", f"{path}?limit=5000&{query}" + (f"&continue={token}" if token else ""), accept=TABLE
        )
        at = [c["name"] for c in data.get("columnDefinitions", [])].index(column)
        cells += [str(row["cells"][at]) for row in data.get("rows", [])]
        token = data["metadata"].get("continue")
        if not token:
            return cells


def nodes_ready(client: Client) -> int:
    """KWOK nodes whose Ready condition is True (the Table's Status column: ``Ready``, ``Ready,...``)."""
    return sum(
        c.split(",")[0] == "Ready"
        for c in table_cells(client, "/api/v1/nodes", "labelSelector=type%3Dkwok", "Status")
    )


def pods_not_running(client: Client, namespace: str) -> int:
    return len(
        table_cells(
            client, f"/api/v1/namespaces/{namespace}/pods", "fieldSelector=status.phase%21%3DRunning", "Name"
        )
    )


def load(
    client: Client, objects: list[dict[str, Any]], *, enforce: bool, namespace: str, start_times: bool = True
) -> dict[str, Any]:
    """Create the synthetic cluster's running part (everything but the preemptors' gangs), wait until every
    node is Ready, every pod Running and every budget's status computed, then (``start_times``) set the pods'
    start times. Returns how long it took (in all and by phase) and what was created."""
    from testkit.synthetic import NOW

    shaped = [real_shape(o, enforce=enforce, preemptor_class="preemptor") for o in objects]
    kinds = lambda k: [o for o in shaped if o["kind"] == k]  # noqa: E731
    started = time.monotonic()
    create_all(
        client, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}], "namespace"
    )
    create_all(client, kinds("PriorityClass"), "PriorityClasses")
    nodes = kinds("Node")
    phases = {"nodes_created_s": create_all(client, nodes, "KWOK nodes")}
    create_all(
        client,
        [o for o in kinds("PodGroup") if o["spec"].get("priorityClassName") != "preemptor"],
        "PodGroups",
    )
    create_all(client, budget_specs(kinds("PodDisruptionBudget"), shaped), "PodDisruptionBudgets")
    running = [o for o in kinds("Pod") if o["spec"].get("nodeName")]
    phases["nodes_ready_s"] = wait_count(
        lambda: nodes_ready(client), len(nodes), 900 + len(nodes) / 10, "KWOK nodes Ready"
    )
    phases["pods_created_s"] = create_all(client, running, "running pods")
    pods_path = f"/api/v1/namespaces/{namespace}/pods"
    phases["pods_running_s"] = wait_count(
        lambda: len(running) - pods_not_running(client, namespace),
        len(running),
        900 + len(running) / 20,
        "pods Running (KWOK)",
    )
    # KWOK starts every pod now; the synthetic cluster's pods have run for minutes to days.
    shift = datetime.now(UTC) - NOW
    starts = {
        o["metadata"]["name"]: o["status"]["startTime"]
        for o in objects
        if start_times and o["kind"] == "Pod" and o["status"].get("startTime")
    }

    def start_time(name: str) -> None:
        then = datetime.strptime(starts[name], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) + shift
        client.merge_patch(
            f"{pods_path}/{name}/status",
            {"status": {"startTime": then.strftime("%Y-%m-%dT%H:%M:%SZ")}},
        )

    with ThreadPoolExecutor(client.connections) as pool:
        list(
            pool.map(start_time, [o["metadata"]["name"] for o in running if o["metadata"]["name"] in starts])
        )
    pdbs = kinds("PodDisruptionBudget")
    wait(
        lambda: all(
            b.get("status", {}).get("observedGeneration") == b["metadata"]["generation"]
            and b["status"].get("expectedPods", 0) > 0
            for b in list_all(client, f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets")
        ),
        300,
        f"{len(pdbs)} budgets' status (the disruption controller)",
        2.0,
    )
    phases["pods_created_per_s"] = len(running) / max(phases["pods_created_s"], 1e-3)
    return {
        "load_s": round(time.monotonic() - started, 1),
        "load_phases": {k: round(v, 1) for k, v in phases.items()},
        "nodes": len(nodes),
        "running_pods": len(running),
    }


def budget_specs(pdbs: list[dict[str, Any]], shaped: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The synthetic budgets (a status allowing one disruption) as specs the disruption controller keeps:
    ``minAvailable`` one less than the running pods each selects (bare pods: an integer, not a percentage).
    The running pods are indexed by label once (40,000 pods scanned per budget took seconds)."""
    by_label: dict[tuple[str, str], list[dict[str, str]]] = {}
    for o in shaped:
        if o["kind"] == "Pod" and o["spec"].get("nodeName"):
            labels = o["metadata"].get("labels", {})
            for item in labels.items():
                by_label.setdefault(item, []).append(labels)
    out = []
    for pdb in pdbs:
        wanted = pdb["spec"]["selector"]["matchLabels"].items()
        first = next(iter(wanted), None)
        candidates = by_label.get(first, []) if first else []
        selected = sum(1 for labels in candidates if wanted <= labels.items())
        shaped_pdb = json.loads(json.dumps(pdb))
        shaped_pdb["spec"]["minAvailable"] = max(selected - 1, 0)
        out.append(shaped_pdb)
    return out


class Watcher:
    """One watch stream on a collection in its own thread: every event with the time it arrived here."""

    def __init__(self, client: Client, path: str):
        self.client, self.path = client, path
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        version = client.ok("GET", f"{path}?limit=1")["metadata"]["resourceVersion"]
        self.thread = threading.Thread(target=self._run, args=(version,), daemon=True)
        self.thread.start()

    def _run(self, version: str) -> None:
        while not self.stopped.is_set():
            try:
                version = self._stream(version)
            except (urllib3.exceptions.HTTPError, OSError, ValueError):
                if self.stopped.is_set():
                    return
                time.sleep(0.5)  # resume from the last event seen

    def _stream(self, version: str) -> str:
        answer = self.client.http.request(
            "GET",
            f"{self.client.server}{self.path}?watch=1&allowWatchBookmarks=true&resourceVersion={version}"
            "&timeoutSeconds=60",
            preload_content=False,
            timeout=urllib3.Timeout(connect=5, read=90),
        )
        buffer = b""
        try:
            for chunk in answer.stream(65536):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        raise RealServerError(f"watch {self.path}: {obj.get('message')}")
                    version = obj["metadata"].get("resourceVersion", version)
                    if event["type"] != "BOOKMARK":
                        with self.lock:
                            self.events.append((time.time(), event["type"], obj))
                if self.stopped.is_set():
                    break
        finally:
            answer.release_conn()
        return version

    def since(self, t: float) -> list[tuple[float, str, dict[str, Any]]]:
        with self.lock:
            return [e for e in self.events if e[0] >= t]

    def stop(self) -> None:
        self.stopped.set()
