"""What the real 1.37 API server serves with its feature gates on and off (docs/kubernetes-versions.md), and
what gangweb says and does when PodGroups are not served; KEP-6089's Job controller grouping Job pods
itself, which gangweb then leaves alone."""

from __future__ import annotations

import json
import logging
import time
import uuid

import pytest

from admission.handler import MUTATE, Webhook
from admission.policy import AdmissionPolicy
from admission.state import PodGroupCache
from admission.watch import PodGroupWatch
from scheduler.kube import KubeCluster
from scheduler.preemption.tasks import cannot_plan
from tests.admission.support import review_bytes
from tests.conftest import started_cluster

WAIT_SECONDS = 120  # a loaded 2-core machine: the controller manager takes a moment


@pytest.fixture(scope="module")
def without_workloads(tmp_path_factory):
    """A control plane with GenericWorkload off: Kubernetes 1.37's default."""
    with started_cluster(tmp_path_factory.mktemp("gates-off"), "--gates", "GenericWorkload=false") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def with_job_workloads(tmp_path_factory):
    """A control plane with the Job controller's Workload integration on (KEP-6089, WorkloadWithJob)."""
    with started_cluster(tmp_path_factory.mktemp("jobs-on"), "--gates", "WorkloadWithJob=true") as cluster:
        yield cluster


def test_discovery_finds_every_workload_kind_when_the_gates_are_on(with_job_workloads):
    served = KubeCluster.from_kubeconfig(with_job_workloads.kubeconfig).served()
    assert (served.podgroups, served.workloads, served.composite_podgroups) == (True, True, True)
    assert served.features["GenericWorkload"] is True
    assert served.job_scheduling is True
    assert served.limits() == []


def test_without_generic_workload_gangweb_says_what_it_cannot_do(without_workloads, caplog):
    kube = KubeCluster.from_kubeconfig(without_workloads.kubeconfig)
    served = kube.served()
    assert (served.podgroups, served.workloads, served.composite_podgroups) == (False, False, False)
    assert served.features["GenericWorkload"] is False
    assert served.job_scheduling is False  # WorkloadWithJob needs GenericWorkload
    [limit] = served.limits()
    assert "does not serve PodGroups" in limit and "GenericWorkload" in limit

    # The watch cache starts at once on the kinds that are served, instead of waiting on 404s until its
    # timeout, and says why in the log.
    with caplog.at_level(logging.WARNING, logger="scheduler.kube.adapter"):
        kube.start(timeout=60)
    try:
        assert any("does not serve PodGroups" in r.getMessage() for r in caplog.records)
        kinds = {o["kind"] for o in kube.snapshot_objects()}
        assert "Node" in kinds and "PodGroup" not in kinds
        # The pipeline's detection pass says the same and opens nothing.
        assert cannot_plan(kube) == limit
    finally:
        kube.close()


def test_without_podgroups_the_webhook_is_ready_and_groups_nothing(without_workloads):
    cache = PodGroupCache()
    watch = PodGroupWatch(cache, KubeCluster.from_kubeconfig(without_workloads.kubeconfig))
    watch.start()
    try:
        assert cache.wait_synced(30), "the webhook would never be ready"
        assert "does not serve PodGroups" in cache.unserved
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "w-0", "namespace": "default", "labels": {"gangweb.io/pod-group": "train"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        }
        answer = json.loads(Webhook(AdmissionPolicy(), cache).handle(MUTATE, review_bytes(pod)).body)[
            "response"
        ]
        assert "patch" not in answer
        assert answer["warnings"][0].startswith("gangweb left the pod out of PodGroup train: The cluster")
    finally:
        watch.stop()


def test_the_job_controller_groups_its_pods_and_gangweb_leaves_them(with_job_workloads):
    """KEP-6089 on a real kube-controller-manager: a root Job gets a Workload and a PodGroup of its
    controller's, its pods name that PodGroup when created, and gangweb's webhook adds nothing."""
    cluster = with_job_workloads
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    cluster.run("create", "namespace", namespace)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": namespace},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            "template": {
                "metadata": {"labels": {"gangweb.io/kwok-keep-running": "true"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                    "tolerations": [
                        {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                },
            },
        },
    }
    cluster.run("apply", "-f", "-", input=json.dumps(job))
    deadline = time.monotonic() + WAIT_SECONDS
    pods: list[dict] = []
    while time.monotonic() < deadline:
        pods = json.loads(cluster.run("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
        if len(pods) == 2:
            break
        time.sleep(0.5)
    assert len(pods) == 2, cluster.run("get", "jobs,workloads,podgroups,events", "-n", namespace).stdout
    [podgroup] = json.loads(cluster.run("get", "podgroups", "-n", namespace, "-o", "json").stdout)["items"]
    owner = next(r for r in podgroup["metadata"]["ownerReferences"] if r.get("controller"))
    assert (owner["kind"], owner["name"]) == ("Job", "train")
    webhook = Webhook(AdmissionPolicy())
    for pod in pods:
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": podgroup["metadata"]["name"]}
        answer = json.loads(webhook.handle(MUTATE, review_bytes(pod)).body)["response"]
        assert answer["allowed"] and "patch" not in answer
    cluster.run("delete", "namespace", namespace, "--wait=false", check=False)


@pytest.mark.django_db
def test_the_api_says_what_gangweb_cannot_do(without_workloads, client, settings, monkeypatch):
    """``GET /api/v1/`` carries discovery's answer and its limits in words: the dashboard's banner text."""
    from scheduler.preemption import runtime

    monkeypatch.setenv("KUBECONFIG", str(without_workloads.kubeconfig))
    settings.GANGWEB_CLUSTER, settings.DEMO = "kube", True
    runtime.reset_cluster()
    try:
        answer = client.get("/api/v1/")
        assert answer.status_code == 200, answer.content
        kubernetes = answer.json()["kubernetes"]
    finally:
        runtime.reset_cluster()
    assert kubernetes["podGroups"] is False and kubernetes["features"]["GenericWorkload"] is False
    [limit] = kubernetes["limits"]
    assert limit.startswith("The cluster does not serve PodGroups (scheduling.k8s.io/v1beta1;")
