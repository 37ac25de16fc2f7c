"""Watch benchmark: LISTs after start-up, unschedulable to first eviction, incremental snapshot updates, memory.

    python manage.py bench watch [--nodes 5000 20000] [--idle-seconds 60] [--churn-seconds 60]
                                 [--concurrency 1] [--server test|real] [--json]

For each size: the synthetic cluster (``testkit.synthetic``: N 8-GPU nodes, about 2N pods) is
loaded into the Kubernetes API test server in its own process, and one real Celery worker (prefork,
``--concurrency`` pool processes, one by default; ``GANGWEB_CLUSTER=kube``, enforce mode) starts against
it with Redis (``REDIS_URL``) and the ledger (``DATABASE_URL``). Measured from the test server's request log (``/__testserver/requests``):

- the worker's LISTs and API calls per minute once its watch cache is synced, idle and under churn
  (``--churn-rate`` pod changes per second, label patches from this process, not counted as calls);
- end to end, for each of the cluster's three preemptors (8, 64, 256 GPUs): this process sets
  ``PodGroupInitiallyScheduled=False`` on the PodGroup (no grace period applies to it), and the time until
  the server answers the first real (not dry-run) eviction; the worker sees the condition on its watch,
  detects, plans on its live snapshot, re-checks, dry-runs and evicts;
- the worker's memory with the caches synced: a pool process's RSS and PSS (pages shared with the other
  processes counted in shares), the parent's, and every process's PSS added up (``worker_total_pss_mib``:
  what the worker's container is charged);
- in this process, ``LiveSnapshot.apply`` per watch event (pod added, bound, deleted) over the same
  cluster, and that a plan on the updated snapshot equals a plan on a fresh parse.

The figures for the largest size are also the top-level keys (``lists_after_startup_idle``,
``lists_after_startup_churn``, ``unschedulable_to_first_eviction_p50_s``, ...); ``sizes`` has every size.
Ledger rows of the benchmark's namespace are removed afterwards. Figures: docs/kube.md, README.

``--server real`` runs the same worker against the real control plane of ``hack/cluster`` instead, the
synthetic cluster created as KWOK nodes and pods (``run_size_real``): LISTs counted by the API server
itself, the preemptors' gangs created one by one and marked ``Unschedulable`` by the real kube-scheduler.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import at_least_one, trials

HELP = "watch caches: LISTs after start-up (idle, churn), unschedulable to first eviction, memory, updates"


def _is_list(entry: dict[str, Any]) -> bool:
    return entry["method"] == "GET" and "watch=" not in (entry["query"] or "") and _collection(entry["path"])


def _collection(path: str) -> bool:
    """A list of the kinds the worker's watch cache holds: the snapshot kinds and the queue kinds the test
    server serves (by their full path: Kueue's ``workloads`` are not Kubernetes')."""
    from scheduler.kube.resources import QUEUE_WATCHED, SNAPSHOT_RESOURCES

    return path in {r.collection_path() for r in (*SNAPSHOT_RESOURCES, *QUEUE_WATCHED)}


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _pss_kib(pid: int) -> int:
    """Proportional set size: pages shared with the other processes (the prefork parent's, copied on write
    by none) counted once among them, so the processes' sum is what their container is charged."""
    path = Path(f"/proc/{pid}/smaps_rollup")
    for line in path.read_text().splitlines() if path.exists() else ():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def incremental(objects: list[dict[str, Any]], events: int = 2000, seed: int = 1) -> dict[str, Any]:
    """p50/p99 of ``LiveSnapshot.apply`` per event, the index rebuild after them, and plan equality."""
    import copy

    from scheduler.engine import parse_snapshot, plan
    from scheduler.engine.builders import pod
    from scheduler.engine.caching.live import LiveSnapshot, raw_key
    from testkit.synthetic import NAMESPACE, preemptor_name

    rng = random.Random(seed)
    current = {(o["kind"], raw_key(o)): o for o in objects}
    live = LiveSnapshot(current.values())
    nodes = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]
    added: list[dict[str, Any]] = []
    timings = []
    for i in range(events):
        choice = rng.random()
        if choice < 0.4 or not added:
            obj, kind = pod(f"churn-{i}", namespace=NAMESPACE, gpus=1, priority=100), "ADDED"
            added.append(obj)
        elif choice < 0.7:
            obj = copy.deepcopy(added.pop(rng.randrange(len(added))))
            obj["spec"]["nodeName"] = rng.choice(nodes)
            added.append(obj)
            kind = "MODIFIED"
        else:
            obj, kind = added.pop(rng.randrange(len(added))), "DELETED"
        key = ("Pod", raw_key(obj))
        if kind == "DELETED":
            current.pop(key, None)
        else:
            current[key] = obj
        started = time.perf_counter()
        live.apply(kind, obj)
        timings.append(time.perf_counter() - started)
    started = time.perf_counter()
    snapshot = live.snapshot()
    rebuild = time.perf_counter() - started
    started = time.perf_counter()
    fresh = parse_snapshot(list(current.values()))
    parse = time.perf_counter() - started
    group = preemptor_name(64)
    equal = plan(snapshot, group).to_dict() == plan(fresh, group).to_dict()
    timings.sort()
    return {
        "update_events": events,
        "update_p50_us": round(statistics.median(timings) * 1e6, 1),
        "update_p99_us": round(timings[int(len(timings) * 0.99) - 1] * 1e6, 1),
        "index_rebuild_s": round(rebuild, 3),
        "fresh_parse_s": round(parse, 3),
        "plan_equals_fresh_parse": equal,
    }


def run_size(nodes: int, options: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from kubetestserver import TestServerProcess
    from testkit.synthetic import synthetic_cluster

    objects = synthetic_cluster(nodes)
    for obj in objects:  # the trials set the condition themselves
        if obj["kind"] == "PodGroup":
            obj.get("status", {}).pop("conditions", None)
    figures: dict[str, Any] = {
        "nodes": nodes,
        "pods": sum(1 for o in objects if o["kind"] == "Pod"),
        "objects": len(objects),
    }
    figures.update(incremental(objects))
    expected = trials.expected_evictions(objects)
    _clean_ledger()  # an earlier size's (or run's) requests for the same gangs are not this size's answers
    snapshot_file = tmp / f"cluster-{nodes}.json"
    snapshot_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    server = TestServerProcess(tmp / f"kubeconfig-{nodes}", load=snapshot_file, bookmark_interval=5.0)
    server.start(timeout=900)
    log_path = tmp / f"worker-{nodes}.log"
    worker = start_worker(server.kubeconfig, options.concurrency, log_path)
    control = server.control
    try:
        started = time.monotonic()
        from scheduler.kube.resources import SNAPSHOT_RESOURCES

        kinds = len(SNAPSHOT_RESOURCES)
        trials.wait(
            lambda: len({e["path"] for e in control.requests(method="GET") if _is_list(e)}) >= kinds,
            900,
            f"the worker's first LIST of each kind (worker log {log_path})",
        )
        figures["lists_answered_s"] = round(time.monotonic() - started, 2)
        pool = wait_synced(worker, options.concurrency, log_path)
        figures["startup_sync_s"] = round(time.monotonic() - started - 3, 2)
        figures["lists_at_startup"] = len([e for e in control.requests(method="GET") if _is_list(e)])
        figures["worker_pool_processes"] = len(pool)
        figures["worker_rss_mib"] = round(_rss_kib(pool[0]) / 1024, 1)
        figures["worker_main_rss_mib"] = round(_rss_kib(worker.pid) / 1024, 1)
        figures["worker_pss_mib"] = round(_pss_kib(pool[0]) / 1024, 1)
        figures["worker_main_pss_mib"] = round(_pss_kib(worker.pid) / 1024, 1)
        # What the worker's container is charged: every process's proportional share, added up.
        figures["worker_total_pss_mib"] = round(sum(_pss_kib(p) for p in [worker.pid, *pool]) / 1024, 1)

        control.clear_requests()
        time.sleep(options.idle_seconds)
        idle = control.requests()
        figures["lists_after_startup_idle"] = len([e for e in idle if _is_list(e)])
        figures["calls_per_min_idle"] = round(len(idle) * 60 / options.idle_seconds, 1)

        running = [o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")]
        control.clear_requests()
        began, sent = time.monotonic(), 0
        while time.monotonic() - began < options.churn_seconds:
            target = running[sent % len(running)]["metadata"]
            url = f"{server.url}/api/v1/namespaces/{target['namespace']}/pods/{target['name']}"
            trials.request(
                url, "PATCH", {"metadata": {"labels": {"churn": str(sent)}}}, "application/merge-patch+json"
            )
            sent += 1
            ahead = sent / options.churn_rate - (time.monotonic() - began)
            if ahead > 0:
                time.sleep(ahead)
        churn = [e for e in control.requests() if e["method"] != "PATCH"]
        figures["churn_changes_per_s"] = round(sent / (time.monotonic() - began), 1)
        figures["lists_after_startup_churn"] = len([e for e in churn if _is_list(e)])
        figures["calls_per_min_churn"] = round(len(churn) * 60 / options.churn_seconds, 1)

        figures.update(trials.run_trials(server.url, control, objects, expected, str(log_path)))
        # The highest resident memory of a pool process over the run (index rebuilds, plans, re-checks).
        figures["worker_peak_rss_mib"] = round(max(_rss_kib(p, "VmHWM") for p in pool) / 1024, 1)
    finally:
        stop_worker(worker)
        server.stop()
    return figures


def start_worker(kubeconfig: Path, concurrency: int, log_path: Path) -> subprocess.Popen:
    """One real Celery worker (prefork) with gangweb's defaults (enforce mode everywhere) against the
    cluster of ``kubeconfig``, whatever this shell sets; the ledger and Redis from the environment."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GANGWEB_")},
        "KUBECONFIG": str(kubeconfig),
        "GANGWEB_CLUSTER": "kube",
        "GANGWEB_WATCH": "1",
        "GANGWEB_PENDING_GRACE_SECONDS": str(10**9),  # the Unschedulable condition alone opens a request
        "GANGWEB_REQUEST_COOLDOWN_SECONDS": "0",
        "GANGWEB_RESERVATION_SECONDS": "0",
        "GANGWEB_DETECT_INTERVAL_SECONDS": "3600",
        "GANGWEB_DEMO": "0",
    }
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "gangweb", "worker", "--pool=prefork"]
            + [f"--concurrency={concurrency}"]
            + ["--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_synced(worker: subprocess.Popen, concurrency: int, log_path: Path) -> list[int]:
    """The pool processes, once their watch caches are synced: the live snapshot parses the lists on the
    informer threads, so synced is when their memory stops growing."""
    # Start-up takes over a minute on a loaded machine (Django, the app, the first lists): five minutes.
    trials.wait(lambda: len(_children(worker.pid)) >= concurrency, 300, f"the pool processes ({log_path})")
    pool, last, steady = _children(worker.pid), -1, 0
    while steady < 3:
        if worker.poll() is not None:
            raise RuntimeError(f"the worker exited ({worker.returncode}); its log: {log_path}")
        time.sleep(1)
        now = _children(worker.pid)  # a short-lived child at start-up is not a pool process
        try:
            rss = sum(_rss_kib(p) for p in now)
        except FileNotFoundError:
            rss = -1
        steady = steady + 1 if now == pool and rss >= 0 and abs(rss - last) < 1024 * len(pool) else 0
        pool, last = now, rss
    return pool


def stop_worker(worker: subprocess.Popen) -> None:
    worker.terminate()
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()


def run_size_real(nodes: int, options: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """``run_size`` against the real control plane: the API server counts the LISTs (its
    ``apiserver_request_total{verb="LIST"}``, every client's: the worker's, kube-scheduler's, the controller
    manager's, KWOK's), the real kube-scheduler marks each preemptor's PodGroup ``Unschedulable`` as it
    is created, and the first eviction is the first victim pod this process sees terminating on its watch."""
    from scheduler.kube.resources import SNAPSHOT_RESOURCES
    from testkit.synthetic import NAMESPACE, synthetic_cluster

    from .native import trial
    from .realserver import PODGROUPS, ControlPlane, Watcher, audited_lists, lists_between, load, progress

    objects = synthetic_cluster(nodes)
    plurals = {r.plural for r in SNAPSHOT_RESOURCES}
    figures: dict[str, Any] = {"server": "real", "nodes": nodes}
    _clean_ledger()
    # Thousands of KWOK nodes renew their leases slower than every 40 s on this machine: a longer lease. KWOK
    # renews each every quarter of it, so 600 s at 20,000 nodes would be 133 writes a second, more than the
    # loader's pods: at least nodes / 5 s keeps renewals at most 20 a second.
    lease = max(600, nodes // 5)
    figures["node_lease_s"] = lease
    with ControlPlane(
        tmp / f"cluster-{nodes}", env={"GANGWEB_CLUSTER_NODE_LEASE_SECONDS": str(lease)}
    ) as plane:
        client = plane.client
        figures.update(load(client, objects, enforce=True, namespace=NAMESPACE, start_times=False))
        figures["pods"] = figures.pop("running_pods")
        # The control plane's memory with the cluster loaded (resident now, MiB) and, at the end, its peak.
        figures["control_plane_rss_mib"] = {k: v["rss_mib"] for k, v in plane.memory().items()}
        log_path = tmp / f"worker-{nodes}.log"
        before = client.list_lists()
        started = time.monotonic()
        worker = start_worker(plane.kubeconfig, options.concurrency, log_path)
        try:
            pool = wait_synced(worker, options.concurrency, log_path)
            figures["startup_sync_s"] = round(time.monotonic() - started - 3, 2)
            progress("gangweb's worker synced its watch caches")
            pods = Watcher(client, f"/api/v1/namespaces/{NAMESPACE}/pods")
            groups = Watcher(client, f"{PODGROUPS}/namespaces/{NAMESPACE}/podgroups")
            synced, synced_at = client.list_lists(), time.time()
            figures["lists_at_startup"] = lists_between(before, synced, plurals)
            figures["worker_rss_mib"] = round(_rss_kib(pool[0]) / 1024, 1)
            figures["worker_total_pss_mib"] = round(sum(_pss_kib(p) for p in [worker.pid, *pool]) / 1024, 1)
            time.sleep(options.idle_seconds)
            idle, idle_at = client.list_lists(), time.time()
            figures["lists_after_startup_idle"] = lists_between(synced, idle, plurals)
            running = [
                o["metadata"]["name"] for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")
            ]
            began, sent = time.monotonic(), 0
            while time.monotonic() - began < options.churn_seconds:
                client.merge_patch(
                    f"/api/v1/namespaces/{NAMESPACE}/pods/{running[sent % len(running)]}",
                    {"metadata": {"labels": {"churn": str(sent)}}},
                )
                sent += 1
                ahead = sent / options.churn_rate - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
            figures["churn_changes_per_s"] = round(sent / (time.monotonic() - began), 1)
            churned, churned_at = client.list_lists(), time.time()
            figures["lists_after_startup_churn"] = lists_between(idle, churned, plurals)
            time.sleep(1.5)  # the audit log is written in batches of at most a second
            # Who listed what (every resource, every client; the counts above are the snapshot's kinds).
            figures["lists_idle_by_client"] = audited_lists(plane.state, synced_at, idle_at)
            figures["lists_churn_by_client"] = audited_lists(plane.state, idle_at, churned_at)
            try:
                gangs = [trial(client, objects, gpus, pods, groups, True, 300) for gpus in (8, 64, 256)]
            finally:
                pods.stop()
                groups.stop()
            after, after_at = client.list_lists(), time.time()
            figures["lists_during_trials"] = lists_between(churned, after, plurals)
            time.sleep(1.5)  # the audit log's last batch
            # Whose they are: the Eviction API lists the namespace's budgets for every eviction, dry run or not.
            figures["lists_trials_by_client"] = audited_lists(plane.state, churned_at, after_at)
            figures["lists_during_trials_by_resource"] = {
                r: n for r in sorted(plurals) if (n := lists_between(churned, after, [r]))
            }
            latencies = [g["seconds_unschedulable_to_first_eviction"] for g in gangs]
            figures["trials_without_eviction"] = [g["gpus"] for g, s in zip(gangs, latencies) if s is None]
            figures["unschedulable_to_first_eviction_s"] = latencies
            timelines = [g["timeline"] for g in gangs if g["timeline"]]
            figures["first_eviction_timelines_s"] = timelines
            figures["first_eviction_phase_p50_s"] = trials.phase_medians(timelines)
            measured = [s for s in latencies if s is not None]
            figures["unschedulable_to_first_eviction_p50_s"] = (
                round(statistics.median(measured), 3) if measured else None
            )
            # Nearest rank: with the three preemptors' trials, the slowest of them.
            figures["unschedulable_to_first_eviction_p95_s"] = (
                round(sorted(measured)[math.ceil(0.95 * len(measured)) - 1], 3) if measured else None
            )
            figures["seconds_to_placed"] = [g["seconds_to_placed"] for g in gangs]
            figures["worker_peak_rss_mib"] = round(max(_rss_kib(p, "VmHWM") for p in pool) / 1024, 1)
            figures["control_plane_peak_rss_mib"] = {k: v["peak_mib"] for k, v in plane.memory().items()}
        finally:
            stop_worker(worker)
    return figures


def _clean_ledger() -> None:
    from scheduler.preemption.models import PreemptionRequest
    from testkit.synthetic import NAMESPACE

    PreemptionRequest.objects.filter(namespace=NAMESPACE).delete()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=at_least_one, nargs="+", default=[5000, 20000])
    parser.add_argument("--idle-seconds", type=at_least_one, default=60)
    parser.add_argument("--churn-seconds", type=at_least_one, default=60)
    parser.add_argument("--churn-rate", type=at_least_one, default=100, help="pod changes per second")
    parser.add_argument(
        "--concurrency", type=at_least_one, default=1, help="the worker's pool processes (deploy/: 2)"
    )
    parser.add_argument(
        "--server",
        choices=["test", "real"],
        default="test",
        help="the API test server (default) or the real control plane of hack/cluster with KWOK nodes",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def handle(options: argparse.Namespace) -> int:
    from .realserver import exit_on_sigterm

    exit_on_sigterm()
    sizes = []
    tmp = tempfile.mkdtemp(prefix="bench-watch-")  # kept when a size fails: the worker's log is in it
    try:
        for nodes in sorted(options.nodes):
            print(f"bench watch: {nodes} nodes ({options.server} server) ...", file=sys.stderr)
            measure = run_size_real if options.server == "real" else run_size
            sizes.append(measure(nodes, options, Path(tmp)))
    finally:
        _clean_ledger()
    shutil.rmtree(tmp, ignore_errors=True)
    figures = {**sizes[-1], "sizes": sizes}
    if options.json:
        print(json.dumps(figures))
        return 0
    keys = [k for k in sizes[0] if k != "nodes"]
    print(f"{'nodes':<40}" + "".join(f"{s['nodes']:>14,}" for s in sizes))
    for key in keys:
        print(f"{key:<40}" + "".join(f"{_cell(s.get(key)):>14}" for s in sizes))
    return 0


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return "/".join(f"{v:.2f}" if isinstance(v, float) else str(v)[:40] for v in value) or "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
