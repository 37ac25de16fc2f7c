"""Native against gangweb: kube-scheduler's own workload-aware preemption and gangweb's, on one real cluster.

    python manage.py bench native [--nodes 64 1000] [--gangs 8 64 256] [--policies native gangweb]
                                  [--place-timeout 300] [--json]

For each size and each policy a fresh real control plane (``hack/cluster/cluster.py up``: kube-apiserver,
kube-scheduler, kube-controller-manager, KWOK) gets the same synthetic cluster (``testkit.synthetic``:
N 8-GPU KWOK nodes in racks and blocks, about 90 % of the GPUs held by gangs in four priority tiers, a third
of them ``disruptionMode: single``, PodDisruptionBudgets), then the preemptors' gangs of 8, 64 (rack topology)
and 256 GPUs (block topology) are created one after the other; each must be placed before the next.

- ``native``: the preemptor's PriorityClass preempts (``PreemptLowerPriority``), so kube-scheduler's
  PodGroup preemption (KEP-5710, ``PodGroupPreemptionPolicy``) picks and deletes the victims.
- ``gangweb``: the class says ``Never`` (kube-scheduler is kept out, as in enforce mode), the PodGroup
  carries gangweb's ``gangweb.io/preemption-policy``, and one real Celery worker (enforce mode) sees
  kube-scheduler's ``PodGroupInitiallyScheduled=False``, plans, re-checks, dry-runs and evicts through the
  Eviction API; kube-scheduler then places the gang.

Per policy: pods evicted, victim units (a ``disruptionMode: all`` gang is one unit, any other pod its own),
GPU-hours lost (each evicted pod's GPUs times how long it had run), gangs left broken (a ``disruptionMode: all``
gang of which some pods but not all were evicted; ``gangs_below_min_count`` counts every gang left running
below its minCount), and seconds from the gang's ``Unschedulable`` condition (as this process saw it on its
watch) to the last of its pods bound (``seconds_to_placed_p50``, over every gang placed). For gangweb, the
ledger's evicted pods too (``ledger_evicted_pods``). Figures: docs/kube.md, README.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import at_least_one
from .realserver import (
    PODGROUPS,
    ControlPlane,
    Watcher,
    create_all,
    exit_on_sigterm,
    load,
    progress,
    real_shape,
)

HELP = "kube-scheduler's workload-aware preemption against gangweb's, on the real control plane and KWOK"
POLICIES = ("native", "gangweb")
CONDITION = "PodGroupInitiallyScheduled"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=at_least_one, nargs="+", default=[64, 1000])
    parser.add_argument("--gangs", type=int, nargs="+", choices=[8, 64, 256], default=[8, 64, 256])
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    parser.add_argument(
        "--place-timeout", type=at_least_one, default=300, help="seconds a gang may take to be placed"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def handle(options: argparse.Namespace) -> int:
    exit_on_sigterm()
    runs: list[dict[str, Any]] = []
    for nodes in sorted(options.nodes):
        for policy in options.policies:
            print(f"bench native: {policy}, {nodes} nodes ...", file=sys.stderr, flush=True)
            runs.append(run(policy, nodes, options))
    figures = {policy: summary([r for r in runs if r["policy"] == policy]) for policy in options.policies}
    figures["runs"] = runs
    if options.json:
        print(json.dumps(figures))
        return 0
    print(table(figures, options.policies))
    return 0


def run(policy: str, nodes: int, options: argparse.Namespace) -> dict[str, Any]:
    """One policy on one fresh control plane of ``nodes`` KWOK nodes."""
    from testkit.synthetic import NAMESPACE, synthetic_cluster

    from .watch import _clean_ledger, start_worker, stop_worker, wait_synced

    objects = synthetic_cluster(nodes)
    enforce = policy == "gangweb"
    figures: dict[str, Any] = {"policy": policy, "nodes": nodes}
    tmp = tempfile.mkdtemp(prefix=f"bench-native-{policy}-")  # kept when the run fails: the logs are in it
    with ControlPlane(Path(tmp) / "cluster") as plane:
        client = plane.client
        figures.update(load(client, objects, enforce=enforce, namespace=NAMESPACE))
        worker = None
        try:
            if enforce:
                _clean_ledger()
                log = Path(tmp) / "worker.log"
                worker = start_worker(plane.kubeconfig, 1, log)
                wait_synced(worker, 1, log)
                progress("gangweb's worker synced its watch caches")
            pods = Watcher(client, f"/api/v1/namespaces/{NAMESPACE}/pods")
            groups = Watcher(client, f"{PODGROUPS}/namespaces/{NAMESPACE}/podgroups")
            try:
                gangs = [
                    trial(client, objects, gpus, pods, groups, enforce, options.place_timeout)
                    for gpus in sorted(options.gangs)
                ]
            finally:
                pods.stop()
                groups.stop()
            figures["gangs"] = gangs
            evicted = sorted({name for gang in gangs for name in gang.pop("evicted")})
            figures.update(damage(objects, evicted))
            if enforce:
                figures["ledger_evicted_pods"] = ledger_evicted(NAMESPACE)
        finally:
            if worker is not None:
                stop_worker(worker)
                _clean_ledger()
    shutil.rmtree(tmp, ignore_errors=True)
    return figures


def trial(
    client,
    objects: list[dict[str, Any]],
    gpus: int,
    pods: Watcher,
    groups: Watcher,
    enforce: bool,
    timeout: float,
) -> dict[str, Any]:
    """Create one preemptor gang, wait until all its pods are bound (or ``timeout``), and say what it took."""
    from testkit.synthetic import preemptor_name

    from . import trials

    name = preemptor_name(gpus).split("/")[1]
    shaped = [
        real_shape(o, enforce=enforce, preemptor_class="preemptor")
        for o in objects
        if (o["kind"] == "PodGroup" and o["metadata"]["name"] == name)
        or (o["kind"] == "Pod" and o["spec"].get("schedulingGroup", {}).get("podGroupName") == name)
    ]
    members = {o["metadata"]["name"] for o in shaped if o["kind"] == "Pod"}
    since = datetime.now(UTC)
    t0 = time.time()
    create_all(client, [o for o in shaped if o["kind"] == "PodGroup"], f"PodGroup {name}")
    create_all(client, [o for o in shaped if o["kind"] == "Pod"], f"pods of {name}")

    def bound() -> float | None:
        nodes: dict[str, tuple[float, str | None]] = {}
        for at, _kind, obj in pods.since(t0):
            if obj["metadata"]["name"] in members:
                nodes[obj["metadata"]["name"]] = (at, obj["spec"].get("nodeName"))
        if len(nodes) == len(members) and all(node for _, node in nodes.values()):
            return max(at for at, _ in nodes.values())
        return None

    def evictions() -> list[tuple[float, str]]:
        # gangweb's: the victims its ledger names (a watch event of an earlier trial's victim may arrive
        # after this trial began); kube-scheduler's: any pod but the gang's seen going since it began.
        named = trials.victims(name, since) if enforce else None
        return [
            (at, obj["metadata"]["name"])
            for at, kind, obj in pods.since(t0)
            if obj["metadata"]["name"] not in members
            and (named is None or obj["metadata"]["name"] in named)
            and (kind == "DELETED" or obj["metadata"].get("deletionTimestamp"))
        ]

    def given_up() -> bool:  # gangweb found no plan (its requests ended, nothing evicted): no room coming
        return enforce and trials._settled(name, since) and not trials.victims(name, since)

    deadline = time.monotonic() + timeout
    placed_at = None
    while placed_at is None and time.monotonic() < deadline and not given_up():
        time.sleep(0.2)
        placed_at = bound()
    unschedulable_at = next(
        (
            at
            for at, _kind, obj in groups.since(t0)
            if obj["metadata"]["name"] == name
            and any(
                c["type"] == CONDITION and c["status"] == "False"
                for c in obj.get("status", {}).get("conditions", [])
            )
        ),
        None,
    )
    if enforce:  # gangweb's requests for this gang have ended before the next gang comes
        trials.wait(
            lambda: not trials._requests(name, since).filter(state__in=trials._active_states()).exists(),
            trials.FINISH_TIMEOUT,
            f"the end of gangweb's requests for {name}",
        )
        # Every victim its ledger names seen going on this watch, which may deliver them late.
        trials.wait(
            lambda: trials.victims(name, since) <= {n for _, n in evictions()},
            trials.FINISH_TIMEOUT,
            f"the watch to deliver the evictions for {name}",
        )
    else:
        time.sleep(2)  # the victims' deletions of the last moment reach the watch
    evicted = evictions()
    start = unschedulable_at if unschedulable_at is not None else t0
    first_eviction = min((at for at, _ in evicted), default=None)
    out = {
        "gpus": gpus,
        "pods": len(members),
        "placed": placed_at is not None,
        "seconds_to_placed": round(placed_at - start, 3) if placed_at else None,
        "seconds_created_to_placed": round(placed_at - t0, 3) if placed_at else None,
        "seconds_unschedulable_to_first_eviction": (
            round(first_eviction - start, 3) if first_eviction is not None else None
        ),
        # Where those seconds went (the ledger's phases, seconds after the condition): gangweb's runs only.
        "timeline": (
            trials.timeline(name, since, start, first_eviction - start)
            if enforce and first_eviction is not None
            else {}
        ),
        "seen_unschedulable": unschedulable_at is not None,
        "evicted_pods": len({n for _, n in evicted}),
        "evicted": sorted({n for _, n in evicted}),
    }
    progress(
        f"gang of {gpus} GPUs: {'placed' if out['placed'] else 'NOT placed'} "
        f"after {out['seconds_to_placed']} s, {out['evicted_pods']} pods evicted"
    )
    return out


def damage(objects: list[dict[str, Any]], evicted: list[str]) -> dict[str, Any]:
    """What evicting ``evicted`` (pod names of the synthetic cluster) cost: the contract's figures."""
    from testkit.synthetic import NOW

    groups = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PodGroup"}
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    members: dict[str, list[str]] = {}
    for name, obj in pods.items():
        group = obj["spec"].get("schedulingGroup", {}).get("podGroupName")
        if group and obj["spec"].get("nodeName"):
            members.setdefault(group, []).append(name)
    gone = set(evicted)
    units, seconds = set(), 0.0
    for name in gone:
        obj = pods[name]
        group = obj["spec"].get("schedulingGroup", {}).get("podGroupName")
        whole = group and "all" in groups[group]["spec"]["disruptionMode"]
        units.add(f"PodGroup/{group}" if whole else f"Pod/{name}")
        started = datetime.strptime(obj["status"]["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        gpus = int(obj["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu", 0))
        seconds += gpus * (NOW - started).total_seconds()
    broken, below = 0, 0
    for group, names in members.items():
        lost = sum(n in gone for n in names)
        if not lost:
            continue
        spec = groups[group]["spec"]
        if "all" in spec["disruptionMode"] and lost < len(names):
            broken += 1
        minimum = spec["schedulingPolicy"].get("gang", {}).get("minCount", 1)
        if minimum > 1 and 0 < len(names) - lost < minimum:
            below += 1
    return {
        "evicted_pods": len(gone),
        "victim_units": len(units),
        "gpu_hours_lost": round(seconds / 3600, 1),
        "broken_gangs": broken,
        "gangs_below_min_count": below,
    }


def ledger_evicted(namespace: str) -> int:
    from scheduler.preemption.models import Eviction, EvictionState

    return Eviction.objects.filter(namespace=namespace, state=EvictionState.EVICTED).count()


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One policy's figures over every size: sums, and the median over every gang placed."""
    placed = [g["seconds_to_placed"] for r in runs for g in r["gangs"] if g["placed"]]
    out: dict[str, Any] = {
        key: sum(r[key] for r in runs)
        for key in ("evicted_pods", "victim_units", "broken_gangs", "gangs_below_min_count")
    }
    out["gpu_hours_lost"] = round(sum(r["gpu_hours_lost"] for r in runs), 1)
    out["seconds_to_placed_p50"] = round(statistics.median(placed), 3) if placed else None
    out["gangs_placed"] = len(placed)
    out["gangs"] = sum(len(r["gangs"]) for r in runs)
    if any("ledger_evicted_pods" in r for r in runs):
        out["ledger_evicted_pods"] = sum(r.get("ledger_evicted_pods", 0) for r in runs)
    return out


def table(figures: dict[str, Any], policies: list[str]) -> str:
    rows = [f"{'':<24}" + "".join(f"{p:>14}" for p in policies)]
    for key in (
        "evicted_pods",
        "victim_units",
        "gpu_hours_lost",
        "broken_gangs",
        "gangs_below_min_count",
        "seconds_to_placed_p50",
        "gangs_placed",
    ):
        rows.append(f"{key:<24}" + "".join(f"{_cell(figures[p].get(key)):>14}" for p in policies))
    rows.append("")
    rows.append(f"{'policy':<10}{'nodes':>7}{'gang':>6}{'placed':>8}{'s to placed':>13}{'evicted':>9}")
    for r in figures["runs"]:
        for g in r["gangs"]:
            rows.append(
                f"{r['policy']:<10}{r['nodes']:>7}{g['gpus']:>6}{g['placed']!s:>8}"
                f"{_cell(g['seconds_to_placed']):>13}{g['evicted_pods']:>9}"
            )
    return "\n".join(rows)


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)
