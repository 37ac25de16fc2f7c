"""The idle figure against a real Prometheus scraping a dcgm-exporter-shaped exporter: idle GPUs by cause,
joined to pods and gangs by dcgm-exporter's labels (a shared DRA claim to all its consumers), unknown
labels never idle, Prometheus missing, down or slow counting nothing as idle; cut to the reader."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from gangweb.dashboard import idle, live
from gangweb.dashboard.models import IdleSample
from scheduler.activity import parse, query
from scheduler.preemption import healthwatch, metrics, runtime
from scheduler.preemption.models import Plan, PreemptionRequest, RequestState
from tests.gangweb.api.v1.conftest import token_reader
from tests.gangweb.prometheus import PROFILING, UTILISATION, DcgmExporter, Prometheus, gpu_labels
from tests.scheduler.preemption.builders import FakeCluster, node, pod, podgroup

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

SAMPLE = 60  # GANGWEB_IDLE_SAMPLE_SECONDS: the first sample covers one period


def cluster_objects() -> list[dict]:
    objects = [node(f"node-{i}") for i in range(6)]
    # team-a/train: busy on node-0 and node-1 (16 GPUs)
    objects += [podgroup("team-a", "train", min_count=2, priority=100)]
    objects += [
        pod("team-a", f"train-{i}", group="train", priority=100, node_name=f"node-{i}") for i in range(2)
    ]
    # team-a/notebook: one GPU on node-2, doing nothing
    objects += [podgroup("team-a", "notebook", min_count=1, priority=10)]
    objects += [pod("team-a", "notebook-0", group="notebook", priority=10, gpus=1, node_name="node-2")]
    # team-a/pair: two pods sharing one DRA GPU (a shared claim) on node-5, idle
    objects += [podgroup("team-a", "pair", min_count=2, priority=10)]
    objects += [
        pod("team-a", f"pair-{i}", group="pair", priority=10, gpus=0, node_name="node-5") for i in range(2)
    ]
    objects += [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "pair-gpu", "namespace": "team-a", "uid": "claim-pair"},
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
            },
            "status": {
                "reservedFor": [{"resource": "pods", "name": f"pair-{i}", "uid": f"u{i}"} for i in range(2)],
            },
        }
    ]
    # team-a/wait: waits for 8 GPUs
    objects += [podgroup("team-a", "wait", min_count=1, priority=10, unschedulable=True)]
    objects += [pod("team-a", "wait-0", group="wait", priority=10)]
    # team-b/lame: broken (1 of 2 members), 8 GPUs on node-3; team-b/util: 8 GPUs on node-4, utilisation only
    objects += [podgroup("team-b", "lame", min_count=2, priority=100)]
    objects += [pod("team-b", "lame-0", group="lame", priority=100, node_name="node-3")]
    objects += [podgroup("team-b", "util", min_count=1, priority=100)]
    objects += [pod("team-b", "util-0", group="util", priority=100, node_name="node-4")]
    return objects


def dcgm_series() -> list[tuple[str, dict[str, str], float]]:
    series = []
    for i in range(2):
        for gpu in range(8):
            labels = gpu_labels(f"node-{i}", gpu, container="main", namespace="team-a", pod=f"train-{i}")
            series.append((PROFILING, labels, 0.93))
    series.append(
        (PROFILING, gpu_labels("node-2", 0, container="main", namespace="team-a", pod="notebook-0"), 0.0)
    )
    dra = {"dra_claim_name": "pair-gpu", "dra_claim_namespace": "team-a", "dra_driver_name": "gpu.nvidia.com"}
    series.append(
        (PROFILING, gpu_labels("node-5", 0, container="main", namespace="team-a", pod="pair-0", **dra), 0.0)
    )
    for gpu in range(8):
        series.append(
            (PROFILING, gpu_labels("node-3", gpu, container="main", namespace="team-b", pod="lame-0"), 0.0)
        )
        value = 0.0 if gpu == 0 else 50.0  # percent: this node's GPUs have no profiling metrics
        series.append(
            (
                UTILISATION,
                gpu_labels("node-4", gpu, container="main", namespace="team-b", pod="util-0"),
                value,
            )
        )
    # dcgm labels that name nothing gangweb knows: unknown, never idle
    series.append(
        (PROFILING, gpu_labels("node-2", 1, container="main", namespace="team-a", pod="gone-0"), 0.0)
    )
    series.append((PROFILING, gpu_labels("node-2", 2), 0.0))
    return series


@pytest.fixture
def world(settings, tmp_path):
    settings.DEMO = False
    settings.GANGWEB_IDLE_SAMPLE_SECONDS = SAMPLE
    settings.GANGWEB_IDLE_WINDOW_SECONDS = 30
    settings.GANGWEB_IDLE_THRESHOLD = 0.05
    settings.GANGWEB_PROMETHEUS_TIMEOUT_SECONDS = 2.0
    runtime.set_cluster(FakeCluster(cluster_objects()))
    live.reset()
    exporter = DcgmExporter()
    exporter.set(dcgm_series())
    prometheus = Prometheus(tmp_path, exporter.port).start()
    try:
        prometheus.wait_for(PROFILING, 28)
        prometheus.wait_for(UTILISATION, 8)
        settings.GANGWEB_PROMETHEUS_URL = prometheus.url
        yield prometheus
    finally:
        prometheus.stop()
        exporter.close()
        runtime.reset_cluster()
        live.reset()


def test_idle_gpus_by_cause_joined_to_pods_and_gangs(client, world, admin):
    idle.record_sample()
    answer = client.get("/api/v1/idle/", **admin).json()
    assert answer["activity"]["state"] == "ok"
    assert answer["activity"]["unknownGpus"] == 2
    # free while team-a/wait waits: 7 on node-2 and 8 on node-5; team-b/lame is broken; the notebook's GPU,
    # util-0's GPU at 0 % and the shared claim's GPU (half to each pair pod) are allocated but idle
    assert answer["now"] == {
        "freeWhileWaiting": 15,
        "brokenGangs": 8,
        "allocatedIdle": 3,
        "heldForUnplaced": 0,
    }
    assert answer["lastHour"] == {
        "freeWhileWaiting": round(15 * SAMPLE / 3600, 2),
        "brokenGangs": round(8 * SAMPLE / 3600, 2),
        "allocatedIdle": round(3 * SAMPLE / 3600, 2),
        "heldForUnplaced": 0.0,
    }
    assert set(answer["lastDay"]) == {"freeWhileWaiting", "brokenGangs", "allocatedIdle", "heldForUnplaced"}
    gangs = {f"{g['namespace']}/{g['name']}": g["lastHour"]["allocatedIdle"] for g in answer["byGang"]}
    assert gangs["team-a/notebook"] == gangs["team-a/pair"] == gangs["team-b/util"] == round(SAMPLE / 3600, 2)
    assert "team-a/train" not in gangs  # busy: nothing idle
    sample = metrics.REGISTRY.get_sample_value
    assert sample("gangweb_idle_gpus", {"cause": "allocatedIdle"}) == 3
    assert sample("gangweb_idle_gpus", {"cause": "brokenGangs"}) == 8


def test_a_reader_sees_the_figures_of_their_namespaces(client, world, admin):
    healthwatch.sweep(runtime.get_cluster().snapshot_objects())  # team-b/lame recorded broken
    idle.record_sample()
    viewer = token_reader("viewer-a", "viewer", "--namespaces", "team-a")
    answer = client.get("/api/v1/idle/", **viewer)
    assert answer.status_code == 200
    assert "team-b" not in answer.content.decode()
    body = answer.json()
    assert body["now"] == {"freeWhileWaiting": 15, "brokenGangs": 0, "allocatedIdle": 2, "heldForUnplaced": 0}
    assert [row["namespace"] for row in body["byNamespace"]] == ["team-a"]
    assert body["broken"] == []
    everything = client.get("/api/v1/idle/", **admin).json()
    assert [(b["podGroup"], b["heldGpus"]) for b in everything["broken"]] == [("team-b/lame", 8)]
    # the ledger's entry too, by its kind, for whoever sees its namespace
    entries = client.get("/api/v1/ledger/?kind=gang.broken", **admin).json()["results"]
    assert [(e["namespace"], e["name"], e["data"]["heldGpus"]) for e in entries] == [("team-b", "lame", 8)]
    assert client.get("/api/v1/ledger/?kind=gang.broken", **viewer).json()["count"] == 0
    assert everything["now"]["brokenGangs"] == 8 and len(everything["byNamespace"]) == 2


def test_idle_gpu_hours_per_hour_are_the_readers_namespaces_and_the_free_gpus(client, world, admin):
    """The history behind the overview's idle chart and its CSV: each hour adds up its samples' GPUs times
    the time they cover, a team reader's only her namespaces' gangs (and the cluster's free GPUs, which her
    map shows), within the range asked."""
    healthwatch.sweep(runtime.get_cluster().snapshot_objects())  # team-b/lame recorded broken
    samples = [idle.record_sample() for _ in range(3)]
    now = samples[-1].at
    for sample, back, seconds in zip(samples, (30, 3, 0), (3600, 1800, 3600), strict=True):
        IdleSample.objects.filter(pk=sample.pk).update(at=now - timedelta(hours=back), seconds=seconds)
    viewer = token_reader("viewer-a", "viewer", "--namespaces", "team-a")

    def per_hour(reader, query=""):
        answer = client.get("/api/v1/idle/gpu-hours/" + query, **reader)
        assert answer.status_code == 200, answer.content
        body = answer.json()
        return (
            body["days"],
            [{k: v for k, v in p.items() if k != "at"} for p in body["points"]],
            body["total"],
        )

    hour = {"freeWhileWaiting": 15.0, "brokenGangs": 0.0, "allocatedIdle": 2.0, "heldForUnplaced": 0.0}
    half = {cause: gpus / 2 for cause, gpus in hour.items()}
    days, points, total = per_hour(viewer)
    assert days == 2 and points == [hour, half, hour]  # 30 h, 3 h back (half an hour), now; oldest first
    assert total == {cause: hour[cause] * 2.5 for cause in hour}
    days, points, _ = per_hour(viewer, "?days=1")
    assert days == 1 and points == [half, hour]
    everything = {**hour, "brokenGangs": 8.0, "allocatedIdle": 3.0}  # team-b's broken gang and idle GPU
    assert per_hour(admin, "?days=1")[1] == [{k: v / 2 for k, v in everything.items()}, everything]
    for wrong in ("0", "3", "two"):
        assert client.get(f"/api/v1/idle/gpu-hours/?days={wrong}", **viewer).status_code == 400


def test_prometheus_down_slow_or_missing_counts_nothing_as_idle(client, world, admin, settings):
    world.stop()
    idle.record_sample()
    answer = client.get("/api/v1/idle/", **admin).json()
    assert answer["activity"]["state"] == "unavailable" and "did not answer" in answer["activity"]["detail"]
    assert answer["now"]["allocatedIdle"] == 0 and answer["now"]["brokenGangs"] == 8  # the rest still counts

    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        settings.GANGWEB_PROMETHEUS_URL = f"http://127.0.0.1:{silent.getsockname()[1]}"
        settings.GANGWEB_PROMETHEUS_TIMEOUT_SECONDS = 0.5
        idle.record_sample()
    answer = client.get("/api/v1/idle/", **admin).json()
    assert answer["activity"]["state"] == "unavailable" and "timed out" in answer["activity"]["detail"]
    assert answer["now"]["allocatedIdle"] == 0

    settings.GANGWEB_PROMETHEUS_URL = ""
    idle.record_sample()
    answer = client.get("/api/v1/idle/", **admin).json()
    assert answer["activity"]["state"] == "missing"
    assert answer["now"] == {
        "freeWhileWaiting": 15,
        "brokenGangs": 8,
        "allocatedIdle": 0,
        "heldForUnplaced": 0,
    }


def test_a_partial_answer_is_said_and_counts_nothing_as_idle():
    body = {
        "status": "success",
        "warnings": ["some shards did not answer"],
        "data": {"resultType": "vector", "result": [{"metric": {"pod": "x"}, "value": [1, "0"]}]},
    }
    reading = parse(json.dumps(body).encode())
    assert reading.state == "partial" and "shards" in reading.detail
    assert idle.idle_now({"gangs": [], "nodes": []}, [], reading, bound={}, now=0, window=30) == ({}, 0)


def test_an_answer_prometheus_should_not_give_is_unavailable_never_read_in_part():
    """A proxy's page, or rows without a [time, value] pair or with a value that is no number: the whole
    answer is unreadable, so no GPU is idle and the state says why (not ``ok`` with the rows that happened
    to parse)."""
    bodies = [
        b'{"status": "success", "data": {"resultType": "vector", "result": ['
        b'{"metric": {"namespace": "team-a", "pod": "notebook-0"}, "value": [1, "1"]},'
        b'{"metric": {"namespace": "team-a", "pod": "train-0"}, "value": "8"}]}}',
        b'{"status": "success", "data": {"resultType": "vector", "result": ['
        b'{"metric": {"namespace": "team-a", "pod": "notebook-0"}, "value": [1, "1"]},'
        b'{"metric": {"namespace": "team-a", "pod": "train-0"}, "value": [1, "eight"]}]}}',
        b"<html>a proxy's login page</html>",
    ]

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = bodies[0]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        while bodies:
            reading = query(f"http://127.0.0.1:{server.server_port}", window_seconds=30, threshold=0.05)
            assert (reading.state, reading.series) == ("unavailable", []), bodies[0]
            assert "no instant vector" in reading.detail
            bodies.pop(0)
    finally:
        server.shutdown()
        server.server_close()


def test_gpus_gangweb_reserved_for_a_gang_not_yet_placed_are_held_for_it_not_free(client, world, admin):
    """team-a/wait's preemption succeeded with node-5 for wait-0: until kube-scheduler binds it, node-5's
    GPUs are held for it (reserve_room keeps other gangs off them), not free while it waits."""
    request = PreemptionRequest.objects.create(
        namespace="team-a", name="wait", state=RequestState.SUCCEEDED, finished_at=timezone.now()
    )
    Plan.objects.create(
        request=request, policy="gangweb", feasible=True, placement={"team-a/wait-0": "node-5"}
    )
    idle.record_sample()
    answer = client.get("/api/v1/idle/", **admin).json()
    assert answer["now"] == {
        "freeWhileWaiting": 7,
        "brokenGangs": 8,
        "allocatedIdle": 3,
        "heldForUnplaced": 8,
    }
    gangs = {f"{g['namespace']}/{g['name']}": g["lastHour"]["heldForUnplaced"] for g in answer["byGang"]}
    assert gangs["team-a/wait"] == round(8 * SAMPLE / 3600, 2)
    viewer = token_reader("viewer-b", "viewer", "--namespaces", "team-b")
    assert client.get("/api/v1/idle/", **viewer).json()["now"]["heldForUnplaced"] == 0

    # once its reservation is over the room is free again
    PreemptionRequest.objects.filter(pk=request.pk).update(finished_at=timezone.now() - timedelta(hours=1))
    idle.record_sample()
    assert client.get("/api/v1/idle/", **admin).json()["now"]["heldForUnplaced"] == 0


def kai_queue(name: str) -> dict:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"resources": {"gpu": {"quota": 8, "limit": -1, "overQuotaWeight": 1}, "cpu": unlimited}},
    }


def test_idle_gpu_hours_per_queue_add_up_the_gangs_each_reader_sees(client, world, admin):
    """KAI's queue label puts team-a/notebook and team-b/util in queue shared, team-a/pair in queue pairs:
    each queue's figure is its gangs' idle GPU-hours, and a reader adds up only the gangs they see."""
    objects = cluster_objects() + [kai_queue("shared"), kai_queue("pairs")]
    queue_of = {"notebook-0": "shared", "util-0": "shared", "pair-0": "pairs", "pair-1": "pairs"}
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] in queue_of:
            obj["metadata"].setdefault("labels", {})["kai.scheduler/queue"] = queue_of[
                obj["metadata"]["name"]
            ]
    runtime.set_cluster(FakeCluster(objects))
    live.reset()
    idle.record_sample()
    one = round(SAMPLE / 3600, 2)  # one GPU idle for one sample

    def per_queue(headers):
        answer = client.get("/api/v1/idle/", **headers)
        assert answer.status_code == 200
        return {
            (q["system"], q["queue"]): (q["lastHour"]["allocatedIdle"], q["lastDay"]["allocatedIdle"])
            for q in answer.json()["byQueue"]
        }

    assert per_queue(admin) == {
        ("kai", "pairs"): (one, one),
        ("kai", "shared"): (round(2 * SAMPLE / 3600, 2),) * 2,
    }
    viewer_a = token_reader("viewer-a", "viewer", "--namespaces", "team-a")
    assert per_queue(viewer_a) == {("kai", "pairs"): (one, one), ("kai", "shared"): (one, one)}
    viewer_b = token_reader("viewer-b", "viewer", "--namespaces", "team-b")
    assert per_queue(viewer_b) == {("kai", "shared"): (one, one)}
