"""Gang health and the activity join at scale: ``python manage.py bench health``.

    python manage.py bench health [--nodes 20000] [--trials 20] [--json]

A synthetic cluster (``testkit.synthetic``: ``--nodes`` nodes of 8 GPUs, 90 % allocated to gangs)
is handed to the gang-health watch of ``scheduler/preemption/healthwatch.py`` as a watch cache hands it
(``seed``, then one event at a time on the listener, as the informer calls it). Each trial kills a member
of a running gang (its ``DELETED`` event) and times until ``gang.broken`` is committed in the ledger
(``broken_detect_p50_s``/``_p99_s``; the settle time ``GANGWEB_BROKEN_SETTLE_SECONDS`` is part of it), then
puts the member back and waits for ``gang.recovered``. The watch's delivery from the API server is not in
it (``bench watch`` measures that). ``activity_join_p50_ms``: the idle query's answer when every allocated GPU is idle (a row
per pod: Prometheus counts the GPUs), parsed and joined to the pods (``scheduler/activity.py``), as each
idle sample does: its rows' pods looked up in the pods by key, which a sample's reading indexes while it
builds the picture (``activity_index_p50_ms``: that index built on a pass of its own, for comparison).
``health_index_mib``: what the health watch's index adds to the process (tracemalloc).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
import tracemalloc

from bench import at_least_one
from scheduler import activity, podstate
from scheduler.engine.resources import pod_gpus

HELP = "a member killed -> gang.broken in the ledger, p50/p99 at --nodes; the Prometheus join per refresh"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes", type=at_least_one, default=20000, help="synthetic nodes of 8 GPUs (default 20000)"
    )
    parser.add_argument(
        "--trials", type=at_least_one, default=20, help="members killed, one at a time (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object, no table")


class _Pods:
    kind = "Pod"
    plural = "pods"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _answer(objects: list[dict]) -> bytes:
    """The answer Prometheus gives the idle query when every allocated GPU is idle (the largest one: a row
    per pod with GPUs), as bytes on the wire."""
    result = []
    for pod in objects:
        if pod.get("kind") == "Pod" and podstate.is_bound(pod) and (gpus := pod_gpus(pod)):
            meta = pod["metadata"]
            result.append(
                {
                    "metric": {"namespace": meta["namespace"], "pod": meta["name"]},
                    "value": [time.time(), str(gpus)],
                }
            )
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


def handle(options: argparse.Namespace) -> int:
    from django.conf import settings
    from django.db.models import Max

    from scheduler.preemption import healthwatch
    from scheduler.preemption.models import BrokenGang
    from testkit.synthetic import synthetic_cluster

    started = time.perf_counter()
    objects = synthetic_cluster(options.nodes)
    # Versions above every one the ledger has seen: an earlier run's episodes must not look newer.
    first = (BrokenGang.objects.aggregate(highest=Max("revision"))["highest"] or 0) + 1
    for version, obj in enumerate(objects, start=first):
        obj["metadata"]["resourceVersion"] = str(version)
    revision = first + len(objects)
    # What a process does with its watch cache (scheduler/engine/caching/heap.py): settled out of the collector's
    # passes, which would otherwise walk the whole cluster while the join allocates its rows.
    gc.collect()
    gc.freeze()
    print(
        f"built {options.nodes} nodes, {len(objects)} objects in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )

    tracemalloc.start()
    recorder = healthwatch.Recorder(float(settings.GANGWEB_BROKEN_SETTLE_SECONDS))
    recorder.watch.seed(objects)
    index_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    recorder.drain()

    members: dict[str, list[dict]] = {}
    for pod in objects:
        if pod.get("kind") == "Pod" and podstate.is_bound(pod) and (key := podstate.gang_key_of_pod(pod)):
            members.setdefault(key, []).append(pod)
    running = sorted(
        k
        for k, pods in members.items()
        if len(pods) >= 2 and (h := recorder.watch.health(k)) and not h.broken
    )
    rng = random.Random(7)
    detect, recover, listener = [], [], []
    for trial, key in enumerate(rng.sample(running, min(options.trials, len(running)))):
        victim = rng.choice(members[key])
        namespace, _, name = key.partition("/")
        revision += 1
        gone = {**victim, "metadata": {**victim["metadata"], "resourceVersion": str(revision)}}
        began = time.perf_counter()
        recorder.on_event("DELETED", _Pods, gone)
        listener.append(time.perf_counter() - began)
        while not BrokenGang.objects.filter(namespace=namespace, name=name, revision=revision).exists():
            time.sleep(0.002)
        detect.append(time.perf_counter() - began)
        revision += 1
        back = {**victim, "metadata": {**victim["metadata"], "resourceVersion": str(revision)}}
        began = time.perf_counter()
        recorder.on_event("ADDED", _Pods, back)
        while not BrokenGang.objects.filter(
            namespace=namespace, name=name, revision=revision, recovered_at__isnull=False
        ).exists():
            time.sleep(0.002)
        recover.append(time.perf_counter() - began)
        print(f"trial {trial + 1}: {key} broken in {detect[-1]:.3f} s", file=sys.stderr)

    body = _answer(objects)
    joins, cpu, indexes = [], [], []
    for _ in range(5):
        began = time.perf_counter()
        pods = podstate.bound_by_key(objects)
        indexes.append((time.perf_counter() - began) * 1000)
        began, began_cpu = time.perf_counter(), time.process_time()
        reading = activity.parse(body)
        activity.join(reading.series, pods, objects)
        joins.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - began_cpu) * 1000)
    joined = activity.join(reading.series, pods, objects)
    report = {
        "nodes": options.nodes,
        "gpus": options.nodes * 8,
        "trials": len(detect),
        "settle_s": float(settings.GANGWEB_BROKEN_SETTLE_SECONDS),
        "broken_detect_p50_s": round(statistics.median(detect), 3) if detect else None,
        "broken_detect_p99_s": round(_pct(detect, 99), 3) if detect else None,
        "recovered_p50_s": round(statistics.median(recover), 3) if recover else None,
        "listener_p50_ms": round(statistics.median(listener) * 1000, 3) if listener else None,
        "activity_rows": len(reading.series),
        "activity_idle_gpus": round(sum(joined.pods.values())),
        "activity_join_p50_ms": round(statistics.median(joins), 1),
        # the same in this process's CPU time: what the join costs beside other work on a shared machine
        "activity_join_cpu_p50_ms": round(statistics.median(cpu), 1),
        # the pods by key on a pass of their own; an idle sample has them from its reading's picture
        "activity_index_p50_ms": round(statistics.median(indexes), 1),
        "health_index_mib": round(index_bytes / 2**20, 1),
    }
    if options.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:24} {value}")
    return 0
