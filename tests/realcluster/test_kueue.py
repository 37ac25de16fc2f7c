"""A real Kueue (its controller built from its Go module, hack/kueue/kueue.py) on the real control plane:
gangweb reads Kueue's ClusterQueues and LocalQueue from its watch cache with the figures Kueue's own status
gives, and takes the pods of a Workload Kueue admitted for Kueue's (the Workload's owner is their Job: no
label says so), so its plans keep clear of them: a gang only those pods could make room for ends
``infeasible:queue-owned`` and nothing is evicted, and after Kueue preempts by itself gangweb's figures are
Kueue's again.

Skipped only when Kueue's controller is not built (``python hack/kueue/kueue.py build``)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from scheduler.cluster import version_reached
from scheduler.engine import parse_snapshot
from scheduler.engine.builders import podgroup
from scheduler.engine.resources import parse_quantity
from scheduler.engine.typed_objects import POLICY_ANNOTATION
from scheduler.kube import KubeCluster
from scheduler.preemption import runtime
from scheduler.preemption.models import (
    ACTIVE_REQUEST_STATES,
    Eviction,
    LedgerEntry,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)
from scheduler.preemption.planning import queue_owners
from scheduler.preemption.tasks import detect_unschedulable_gangs
from scheduler.queues import read_queues
from tests.conftest import ROOT
from tests.realcluster.test_end_to_end import (
    KEEP_RUNNING,
    PODGROUPS,
    WAIT,
    conditions,
    priority_class,
    running,
    until,
)
from tests.realcluster.webhook import as_list

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

SCRIPT = ROOT / "hack" / "kueue" / "kueue.py"
KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def kueue(real_cluster, tmp_path_factory):
    """Kueue's CRDs applied and its controller running against the real API server, stopped afterwards."""
    found = subprocess.run([sys.executable, str(SCRIPT), "bin"], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.skip(
            f"Kueue's controller is not built ({found.stderr.strip()}): python hack/kueue/kueue.py build"
        )
    state = tmp_path_factory.mktemp("kueue")
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "up",
            "--kubeconfig",
            str(real_cluster.kubeconfig),
            "--state",
            str(state),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"kueue.py up failed:\n{done.stderr[-6000:]}", pytrace=False)
    try:
        yield state
    finally:
        subprocess.run([sys.executable, str(SCRIPT), "down", "--state", str(state)], timeout=120)


@pytest.fixture
def pipeline(real_cluster, settings):
    """gangweb's pipeline on the real API server, its watch cache started (the queue kinds included), tasks
    eager; gangs of other tests are only watched."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_MODE = "observe"
    cluster = KubeCluster.from_kubeconfig(real_cluster.kubeconfig, watch_timeout=60)
    cluster.start(timeout=WAIT)
    runtime.set_cluster(cluster)
    try:
        yield cluster
    finally:
        runtime.reset_cluster()
        cluster.close()


class KueueScene:
    """Two KWOK nodes of 4 GPUs; Cohort-mates ClusterQueues ``a`` and ``b`` of 4 nominal GPUs each; a
    LocalQueue in the scene's namespace pointing to ``a``; PriorityClasses low and high (Never: kube-scheduler
    keeps out, gangweb is the one asked to make room)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.id = uuid.uuid4().hex[:6]
        self.ns = f"kq-{self.id}"
        self.pool = {"gangweb.io/kueue-pool": self.id}
        self.cq_a, self.cq_b, self.cohort = f"a-{self.id}", f"b-{self.id}", f"c-{self.id}"
        self.objects = [
            *(self.node(i) for i in range(2)),
            priority_class(f"low-{self.id}", 100),
            priority_class(f"high-{self.id}", 1000, "Never"),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.ns}},
            {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": f"f-{self.id}"}, "spec": {}},
            self.cluster_queue(self.cq_a),
            self.cluster_queue(self.cq_b),
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": "main", "namespace": self.ns},
                "spec": {"clusterQueue": self.cq_a},
            },
        ]
        self.apply(*self.objects)

    def apply(self, *objects):
        self.cluster.run("apply", "-f", "-", input=as_list(*objects))

    def node(self, i: int) -> dict:
        name = f"kq-{self.id}-{i}"
        resources = {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: "4"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {"kwok.x-k8s.io/node": "fake"},
                "labels": {**self.pool, "type": "kwok", "kubernetes.io/hostname": name},
            },
            "status": {"capacity": resources, "allocatable": resources},
        }

    def cluster_queue(self, name: str) -> dict:
        return {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohortName": self.cohort,
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", GPU],
                        "flavors": [
                            {
                                "name": f"f-{self.id}",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "16"},
                                    {"name": GPU, "nominalQuota": "4"},
                                ],
                            }
                        ],
                    }
                ],
            },
        }

    def job(self, name: str, pods: int, gpus: int, tier: str = "low") -> dict:
        """A Job of Kueue's LocalQueue, created suspended (Kueue's webhook would suspend it; none is
        registered): Kueue admits its Workload and resumes it. Its pods carry no Kueue label; its class
        (``tier``) is its Workload's priority."""
        requests = {"cpu": "1", GPU: str(gpus)}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": self.ns, "labels": {"kueue.x-k8s.io/queue-name": "main"}},
            "spec": {
                "suspend": True,
                "parallelism": pods,
                "completions": pods,
                "template": {
                    "metadata": {"labels": {KEEP_RUNNING: "true"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "priorityClassName": f"{tier}-{self.id}",
                        "nodeSelector": self.pool,
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "resources": {"requests": requests, "limits": {GPU: str(gpus)}},
                            }
                        ],
                    },
                },
            },
        }

    def gang(self, name: str, pods: int, gpus: int) -> list[dict]:
        """A gang of its own PodGroup and pods (no Job, no queue), of the high class. Its ``spec.preemptionPolicy``
        is the class's ``Never`` (the API server's Priority admission allows no other), so gangweb's own
        decision is the annotation, as its ensurer writes it in enforce mode: without it the gang never
        preempts."""
        group = podgroup(
            name,
            namespace=self.ns,
            min_count=pods,
            priority_class=f"high-{self.id}",
            preemption_policy="Never",
            annotations={POLICY_ANNOTATION: "PreemptLowerPriority"},
        )
        del group["metadata"]["uid"]
        members = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "namespace": self.ns, "labels": {KEEP_RUNNING: "true"}},
                "spec": {
                    "schedulingGroup": {"podGroupName": name},
                    "priorityClassName": f"high-{self.id}",
                    "nodeSelector": self.pool,
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {
                                "requests": {"cpu": "1", GPU: str(gpus)},
                                "limits": {GPU: str(gpus)},
                            },
                        }
                    ],
                },
            }
            for i in range(pods)
        ]
        return [group, *members]

    def get(self, *args: str) -> dict:
        return json.loads(self.cluster.run("get", *args, "-o", "json").stdout)

    def workloads(self) -> dict[str, dict]:
        """Kueue's Workloads of the namespace by their Job (``workloads`` alone is the native kind)."""
        return {
            w["metadata"]["ownerReferences"][0]["name"]: w
            for w in self.get("workloads.kueue.x-k8s.io", "-n", self.ns)["items"]
        }

    def pods(self, job: str) -> list[dict]:
        return self.get("pods", "-n", self.ns, "-l", f"job-name={job}")["items"]

    def remove(self) -> None:
        self.cluster.run("delete", "namespace", self.ns, "--wait=false", check=False)
        for obj in reversed(self.objects):
            if obj["kind"] not in ("Namespace", "LocalQueue"):
                self.cluster.run("delete", obj["kind"], obj["metadata"]["name"], "--wait=false", check=False)


def _reserved(cq: dict) -> dict[str, dict[str, int]]:
    """Kueue's own status of a ClusterQueue: per resource, its reservation total and what it borrows."""
    out: dict[str, dict[str, int]] = {}
    for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
        for r in flavor.get("resources") or []:
            found = out.setdefault(r["name"], {"total": 0, "borrowed": 0})
            found["total"] += parse_quantity(r.get("total", 0))
            found["borrowed"] += parse_quantity(r.get("borrowed", 0))
    return out


def test_gangweb_reads_kueues_queues_and_never_evicts_what_kueue_admitted(
    real_cluster, kueue, pipeline, settings
):
    scene = KueueScene(real_cluster)
    try:
        # 3 pods of 2 GPUs: 6 GPUs in ClusterQueue a of 4 nominal, 2 borrowed from b in the Cohort.
        scene.apply(scene.job("train", pods=3, gpus=2))
        admitted = until(
            lambda: running(p := scene.pods("train"), 3) and p, "Kueue admits the Job and its pods run"
        )
        cq_a = until(
            lambda: (
                _reserved(c := scene.get("clusterqueue", scene.cq_a)).get(GPU, {}).get("total") == 6 and c
            ),
            "Kueue's status of ClusterQueue a says 6 GPUs reserved",
        )
        # gangweb's watch cache reaches the same state; its figures are Kueue's own.
        assert pipeline.wait_for(
            lambda objects: (
                any(
                    o["kind"] == "Workload"
                    and o["apiVersion"] == KUEUE
                    and o["metadata"].get("namespace") == scene.ns
                    and any(
                        c["type"] == "QuotaReserved" and c["status"] == "True"
                        for c in o["status"]["conditions"]
                    )
                    for o in objects
                    if o.get("status", {}).get("conditions")
                )
                and sum(
                    1
                    for o in objects
                    if o["kind"] == "Pod"
                    and o["metadata"]["namespace"] == scene.ns
                    and o["spec"].get("nodeName")
                )
                == 3
            ),
            timeout=WAIT,
        ), "gangweb's watch cache never saw Kueue's admitted Workload"
        objects = pipeline.cached_objects()
        snapshot = parse_snapshot(objects)
        model = read_queues(objects, snapshot)
        a, b = model.find("kueue", scene.cq_a), model.find("kueue", scene.cq_b)
        local = model.find("kueue", f"{scene.ns}/main")
        kueue_says = _reserved(cq_a)[GPU]
        assert (a.figures("gpu").used, a.figures("gpu").borrowed) == (
            kueue_says["total"],
            kueue_says["borrowed"],
        )
        assert (a.figures("gpu").used, a.figures("gpu").borrowed) == (6, 2)
        assert b.figures("gpu").lent == 2 and b.figures("gpu").guaranteed == 4
        assert a.parent == scene.cohort and local is not None and local.parent == scene.cq_a
        assert local.figures("gpu").used == 6
        # The ownership signal is the Workload's owner, the Job: the pods carry no Kueue label.
        owners = queue_owners(objects, snapshot)
        keys = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in admitted}
        assert {k: o.system for k, o in owners.items() if k in keys} == dict.fromkeys(keys, "kueue")

        # A gang of higher priority that only Kueue's pods make room for: 2 pods of 4 GPUs, 2 GPUs free.
        settings.GANGWEB_NAMESPACE_MODES = {scene.ns: "enforce"}
        settings.GANGWEB_PENDING_GRACE_SECONDS = 0
        scene.apply(*scene.gang("urgent", pods=2, gpus=4))
        request = until(
            lambda: PreemptionRequest.objects.filter(namespace=scene.ns, name="urgent").first(),
            "gangweb opens a request for the urgent gang",
            beat=(detect_unschedulable_gangs,),
        )
        request = until(
            lambda: (
                (r := PreemptionRequest.objects.get(pk=request.pk)).state not in ACTIVE_REQUEST_STATES and r
            ),
            "the request finishes",
        )
        assert (request.mode, request.state) == ("enforce", RequestState.INFEASIBLE), (
            request.state,
            request.reason,
        )
        plan = Plan.objects.get(request=request, source=PlanSource.ENGINE)
        assert plan.outcome == "infeasible:queue-owned" and not plan.evictions, (plan.outcome, plan.evictions)
        assert f"only units kueue placed could make room for {scene.ns}/urgent" in plan.reason, plan.reason
        assert f"Kueue would have to evict Workload {scene.ns}/" in plan.reason, plan.reason
        # The ledger: no eviction in the namespace, no eviction step of the request.
        assert not Eviction.objects.filter(namespace=scene.ns).exists()
        kinds = set(LedgerEntry.objects.filter(request=request).values_list("kind", flat=True))
        assert not {k for k in kinds if k.startswith("eviction.")}, kinds
        # Kueue's pods are untouched: the same ones, still running.
        after = scene.pods("train")
        assert running(after, 3)
        assert {p["metadata"]["uid"] for p in after} == {p["metadata"]["uid"] for p in admitted}

        # Kueue preempts by itself: a Job of the high class needing 4 GPUs (ClusterQueue a's nominal quota)
        # evicts train's Workload (withinClusterQueue: LowerPriority). The urgent gang goes first, or
        # kube-scheduler would give it the freed GPUs (its pods first: the PodGroup is kept while they exist).
        scene.cluster.run("delete", "pods", "urgent-0", "urgent-1", "-n", scene.ns, "--wait=true")
        scene.cluster.run("delete", PODGROUPS, "urgent", "-n", scene.ns, "--wait=false")
        scene.apply(scene.job("boss", pods=2, gpus=2, tier="high"))
        until(lambda: running(scene.pods("boss"), 2), "Kueue preempts train and admits boss; its pods run")
        cq_a = until(
            lambda: (
                (r := _reserved(c := scene.get("clusterqueue", scene.cq_a)).get(GPU, {})).get("total") == 4
                and r.get("borrowed") == 0
                and c
            ),
            "Kueue's status of ClusterQueue a says 4 GPUs reserved, none borrowed",
        )
        cq_b = scene.get("clusterqueue", scene.cq_b)
        workloads = scene.workloads()
        preempted = conditions(workloads["train"])
        assert preempted["Preempted"]["reason"] == "InClusterQueue", preempted
        assert preempted.get("QuotaReserved", {}).get("status") != "True", preempted
        assert conditions(workloads["boss"])["QuotaReserved"]["status"] == "True", workloads["boss"]
        # gangweb's watch cache holds at least what was just read of Kueue's objects.
        read = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"] for o in (cq_a, cq_b)}
        read |= {
            ("Workload", w["metadata"]["name"]): w["metadata"]["resourceVersion"] for w in workloads.values()
        }
        assert pipeline.wait_for(
            lambda objects: all(
                version_reached(cached.get(key, ""), version) and key in cached
                for cached in [
                    {
                        (o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
                        for o in objects
                        if o["apiVersion"] == KUEUE and o["metadata"].get("namespace") in (None, scene.ns)
                    }
                ]
                for key, version in read.items()
            ),
            timeout=WAIT,
        ), "gangweb's watch cache never reached Kueue's Workloads and ClusterQueues after its preemption"
        objects = pipeline.cached_objects()
        model = read_queues(objects, parse_snapshot(objects))
        a, b = model.find("kueue", scene.cq_a), model.find("kueue", scene.cq_b)
        kueue_says = _reserved(cq_a)[GPU]
        assert (a.figures("gpu").used, a.figures("gpu").borrowed) == (
            kueue_says["total"],
            kueue_says["borrowed"],
        )
        assert (a.figures("gpu").used, a.figures("gpu").borrowed, b.figures("gpu").lent) == (4, 0, 0)
        assert _reserved(cq_b).get(GPU, {}).get("total", 0) == b.figures("gpu").used == 0
        # Kueue evicted train's pods, not gangweb: its ledger holds no eviction in the namespace.
        assert not Eviction.objects.filter(namespace=scene.ns).exists()
    finally:
        scene.remove()
