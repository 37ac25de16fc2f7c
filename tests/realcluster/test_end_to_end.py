"""The whole path on the real control plane: kube-apiserver calls gangweb's webhook (`webhook serve`, mutual TLS,
deploy/'s webhook configurations), the real Job controller's pods are grouped, gangweb's ensurer creates their
PodGroup, the real kube-scheduler finds the gang unschedulable on KWOK's GPU nodes, and gangweb's pipeline
(detection, planning, re-check, dry runs, evictions through the real Eviction API under real
PodDisruptionBudgets) frees room the gang is then placed in; observe mode records what kube-scheduler's own
workload-aware preemption did.

The pipeline runs in this process as the Celery tasks do (eager: the tasks' own code, the beat's passes called
in a loop), on gangweb's kube adapter with its watch cache started, against the PostgreSQL ledger."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from admission.tasks import ensure_podgroups
from scheduler.cluster import GANGWEB_CONTROLLER, object_key
from scheduler.kube import KubeCluster
from scheduler.nativemetrics import Scrape
from scheduler.preemption import runtime
from scheduler.preemption.models import (
    ACTIVE_REQUEST_STATES,
    Eviction,
    EvictionState,
    LedgerEntry,
    Plan,
    PlanSource,
    PreemptionRequest,
    RequestState,
)
from scheduler.preemption.observe import preemption_events
from scheduler.preemption.tasks import detect_unschedulable_gangs
from tests.deploy.rendering import build, prepare
from tests.realcluster.webhook import WebhookServer, as_list, webhook_configurations

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 180  # seconds: a loaded 2-core machine runs the control plane, KWOK, the webhook and the suite
POOL_LABEL = "gangweb.io/e2e-pool"
KEEP_RUNNING = "gangweb.io/kwok-keep-running"  # hack/cluster/cluster.py KEEP_RUNNING_LABEL
PODGROUPS = "podgroups.v1beta1.scheduling.k8s.io"


@pytest.fixture(scope="module")
def webhook(real_cluster, tmp_path_factory):
    """`webhook serve` on loopback with mutual TLS, registered with the real API server through the self-signed
    overlay's webhook configurations (clientConfig pointed at it); unregistered before it stops."""
    assert real_cluster.admission is not None, "real_cluster was started without an admission configuration"
    pki = real_cluster.admission / "certs"
    env = {
        **os.environ,
        "KUBECONFIG": str(real_cluster.kubeconfig),
        "GANGWEB_CLUSTER": "kube",
        "GANGWEB_MODE": "observe",
    }
    server = WebhookServer(pki, real_cluster.webhook_port, env, real_cluster.admission / "webhook.log")
    server.start()
    tree = prepare(tmp_path_factory.mktemp("deploy") / "deploy")
    configurations = webhook_configurations(
        build(tree / "overlays" / "self-signed"), real_cluster.webhook_port, pki / "ca.crt"
    )
    try:
        real_cluster.run("apply", "-f", "-", input=as_list(*configurations))
        yield server
    finally:
        for obj in configurations:
            real_cluster.run(
                "delete", obj["kind"], obj["metadata"]["name"], "--ignore-not-found", check=False
            )
        server.stop()


@pytest.fixture
def pipeline(real_cluster, settings):
    """gangweb's pipeline on the real API server: its kube adapter with the watch cache started, tasks eager."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_MODE = "observe"  # other tests' gangs on the shared cluster are only watched
    settings.GANGWEB_PENDING_GRACE_SECONDS = 3600  # only kube-scheduler's own word opens a request
    cluster = KubeCluster.from_kubeconfig(real_cluster.kubeconfig, watch_timeout=60)  # production timeouts
    cluster.start(timeout=WAIT)
    runtime.set_cluster(cluster)
    try:
        yield cluster
    finally:
        runtime.reset_cluster()
        cluster.close()


class Scene:
    """A pool of KWOK GPU nodes of one test, its PriorityClasses and namespaces, removed afterwards."""

    def __init__(self, real_cluster, preemptor_policy: str):
        self.cluster = real_cluster
        self.id = uuid.uuid4().hex[:6]
        self.batch, self.train = f"batch-{self.id}", f"train-{self.id}"
        self.pool = {POOL_LABEL: self.id}
        self.objects = [
            *(self.node(i) for i in range(2)),
            priority_class(f"low-{self.id}", 100),
            priority_class(f"mid-{self.id}", 200),
            priority_class(f"high-{self.id}", 1000, preemptor_policy),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.batch}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.train}},
        ]
        self.cluster.run("apply", "-f", "-", input=as_list(*self.objects))

    def node(self, i: int) -> dict:
        name = f"gpu-{self.id}-{i}"
        resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4"}
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

    def job(self, namespace: str, name: str, tier: str, pods: int = 2, gpus: int = 2) -> dict:
        """A Job of ``pods`` pods of ``gpus`` GPUs each, on this scene's nodes, running until evicted."""
        requests = {"cpu": "1", "nvidia.com/gpu": str(gpus)}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "backoffLimit": 10,
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
                                "resources": {"requests": requests, "limits": {"nvidia.com/gpu": str(gpus)}},
                            }
                        ],
                    },
                },
            },
        }

    def victims(self) -> None:
        """Two Jobs filling the 8 GPUs: ``low`` (priority 100, budget allows 2 disruptions) and ``mid``
        (priority 200, budget allows none). minAvailable, not maxUnavailable: the disruption controller
        cannot count a Job's pods for maxUnavailable (a Job has no scale subresource)."""
        self.cluster.run(
            "apply",
            "-f",
            "-",
            input=as_list(
                self.job(self.batch, "low", "low"),
                self.job(self.batch, "mid", "mid"),
                budget(self.batch, "low", min_available=0),
                budget(self.batch, "mid", min_available=2),
            ),
        )

    def gang(self) -> None:
        self.cluster.run("apply", "-f", "-", input=as_list(self.job(self.train, "train", "high")))

    def pods(self, namespace: str, job: str) -> list[dict]:
        found = self.cluster.run("get", "pods", "-n", namespace, "-l", f"job-name={job}", "-o", "json")
        return json.loads(found.stdout)["items"]

    def get(self, *args: str) -> dict:
        return json.loads(self.cluster.run("get", *args, "-o", "json").stdout)

    def events(self, namespace: str, reason: str) -> list[dict]:
        listed = self.get("events.v1.events.k8s.io", "-n", namespace, f"--field-selector=reason={reason}")
        return listed["items"]

    def preempted_by(self, controller: str) -> list[dict]:
        """The ``Preempted`` events ``controller`` wrote about the victims' pods (not their PodGroups')."""
        return [
            e
            for e in self.events(self.batch, "Preempted")
            if e["reportingController"] == controller and e["regarding"]["kind"] == "Pod"
        ]

    def remove(self) -> None:
        for obj in reversed(self.objects):
            self.cluster.run("delete", obj["kind"], obj["metadata"]["name"], "--wait=false", check=False)


def priority_class(name: str, value: int, policy: str = "PreemptLowerPriority") -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
    }


def budget(namespace: str, job: str, min_available: int) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": job, "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"job-name": job}}},
    }


def until(predicate, what: str, timeout: float = WAIT, every: float = 0.5, beat: tuple = ()):
    """Wait for ``predicate()`` to be true, running the beat's ``passes`` (ENSURE, DETECT) before each look, as
    a worker would every few seconds."""
    deadline = time.monotonic() + timeout
    while True:
        for run in beat:
            run()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(every)


ENSURE, DETECT = ensure_podgroups, detect_unschedulable_gangs
BEAT = (ENSURE, DETECT)


def running(pods: list[dict], count: int) -> bool:
    return len(pods) == count and all(
        p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp") for p in pods
    )


def conditions(obj: dict) -> dict[str, dict]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def uids(pods: list[dict]) -> dict[str, str]:
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["metadata"]["uid"] for p in pods}


def test_gangweb_evicts_through_the_real_eviction_api_and_the_gang_is_placed(
    real_cluster, webhook, pipeline, settings
):
    scene = Scene(real_cluster, preemptor_policy="Never")  # enforce: kube-scheduler must not preempt
    try:
        settings.GANGWEB_NAMESPACE_MODES = {scene.train: "enforce"}
        run_enforced(scene, webhook)
    finally:
        scene.remove()


def run_enforced(scene: Scene, webhook: WebhookServer) -> None:
    answered_before = webhook.answered()
    scene.victims()
    low = until(
        lambda: running(p := scene.pods(scene.batch, "low"), 2) and p, "low's pods Running", beat=BEAT
    )
    mid = until(
        lambda: running(p := scene.pods(scene.batch, "mid"), 2) and p, "mid's pods Running", beat=BEAT
    )
    # The disruption controller keeps the budgets' status (the Eviction API and gangweb's re-check read it).
    until(
        lambda: (
            (s := scene.get("pdb", "-n", scene.batch, "low")["status"]).get("disruptionsAllowed") == 2
            and s.get("observedGeneration") == 1
        ),
        "the disruption controller's status on budget low",
    )
    scene.gang()
    request = until(
        lambda: PreemptionRequest.objects.filter(namespace=scene.train, name="train").first(),
        "gangweb opens a request for train-*/train",
        beat=BEAT,
    )
    # The webhook grouped the real Job controller's pods (kube-apiserver called it with its client
    # certificate: without one the webhook answers 403 and, failurePolicy Ignore, nothing is grouped).
    gang = scene.pods(scene.train, "train")
    assert [p["spec"].get("schedulingGroup") for p in gang] == [{"podGroupName": "train"}] * 2, gang
    answered = webhook.answered()
    grown = {key: answered[key] - answered_before.get(key, 0) for key in answered}
    assert grown[("mutate", "patched")] >= 6, grown  # low's, mid's and train's pods: 2 each
    assert grown[("validate", "allowed")] > 0 and grown[("validate", "error")] == 0, grown
    podgroup = scene.get(PODGROUPS, "-n", scene.train, "train")
    assert podgroup["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gangweb"
    assert podgroup["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert podgroup["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert podgroup["spec"]["preemptionPolicy"] == "Never"  # the class's: kube-scheduler keeps out
    # kube-scheduler's own word opened it: the PodGroup condition it writes, and its FailedScheduling events.
    assert request.trigger == "PodGroupInitiallyScheduled=False (Unschedulable)", request.trigger
    failed = until(lambda: scene.events(scene.train, "FailedScheduling"), "kube-scheduler's FailedScheduling")
    assert {e["reportingController"] for e in failed} == {"default-scheduler"}, failed

    request = until(
        lambda: (r := PreemptionRequest.objects.get(pk=request.pk)).state not in ACTIVE_REQUEST_STATES and r,
        "the request finishes",
    )
    assert request.mode == "enforce" and request.state == RequestState.SUCCEEDED, (
        request.state,
        request.reason,
    )
    # low: the lower priority, and its budget allows the disruptions (mid's allows none).
    plan = Plan.objects.get(request=request, source=PlanSource.ENGINE)
    assert plan.feasible and sorted(plan.evictions) == sorted(uids(low)), plan.evictions
    evictions = list(Eviction.objects.filter(plan__source=PlanSource.ENGINE, namespace=scene.batch))
    assert {e.pod_uid for e in evictions} == set(uids(low).values())  # exactly the planned pods, by UID
    assert all(e.state == EvictionState.EVICTED and e.attempts == 1 for e in evictions), evictions
    assert all((e.dry_run_code, e.api_code) == (201, 201) for e in evictions), evictions  # Eviction API
    kinds = list(LedgerEntry.objects.filter(request=request).order_by("pk").values_list("kind", flat=True))
    steps = ["request.opened", "plan.created", "execution.recheck", "eviction.dry_run", "eviction.result"]
    assert [kinds.index(k) for k in steps] == sorted(kinds.index(k) for k in steps), kinds
    assert kinds.count("eviction.result") == 2 and kinds[-1] == "request.succeeded", kinds

    # The gang is placed by kube-scheduler, which says so on the PodGroup; gangweb's condition beside it.
    placed = until(lambda: running(p := scene.pods(scene.train, "train"), 2) and p, "the gang Running")
    assert {p["spec"]["nodeName"] for p in placed} <= {f"gpu-{scene.id}-0", f"gpu-{scene.id}-1"}
    podgroup = until(
        lambda: (
            conditions(g := scene.get(PODGROUPS, "-n", scene.train, "train"))
            .get("PodGroupInitiallyScheduled", {})
            .get("status")
            == "True"
            and g
        ),
        "kube-scheduler's PodGroupInitiallyScheduled=True",
    )
    assert conditions(podgroup)["PodGroupInitiallyScheduled"]["reason"] == "Scheduled"
    assert conditions(podgroup)["gangweb.io/Preemption"]["reason"] == "VictimsEvicted"
    preempted = until(
        lambda: len(e := scene.preempted_by(GANGWEB_CONTROLLER)) == 2 and e, "gangweb's Preempted events"
    )
    assert sorted(f"{e['regarding']['namespace']}/{e['regarding']['name']}" for e in preempted) == sorted(
        uids(low)
    )
    assert {e["regarding"]["uid"] for e in preempted} == set(uids(low).values())
    assert all(e["related"]["name"] == "train" and e["related"]["kind"] == "PodGroup" for e in preempted)

    # The Job controller replaces what it owns (after its back-off); mid, whose budget allows nothing, is untouched.
    replacements = until(
        lambda: (
            len(
                p := [
                    q
                    for q in scene.pods(scene.batch, "low")
                    if q["metadata"]["uid"] not in uids(low).values()
                ]
            )
            == 2
            and p
        ),
        "the Job controller's replacements for low",
    )
    assert all(p["metadata"]["ownerReferences"][0]["name"] == "low" for p in replacements)
    assert uids(scene.pods(scene.batch, "mid")) == uids(mid)
    # One more beat over the settled cluster: nobody is evicted twice, nothing else is evicted.
    ensure_podgroups()
    detect_unschedulable_gangs()
    evicted = list(
        Eviction.objects.filter(plan__source=PlanSource.ENGINE, state=EvictionState.EVICTED).values_list(
            "pod_uid", flat=True
        )
    )
    assert sorted(evicted) == sorted(uids(low).values()), evicted


def test_observe_mode_records_what_kube_scheduler_preempted(
    real_cluster, webhook, pipeline, settings, client, django_user_model
):
    scene = Scene(real_cluster, preemptor_policy="PreemptLowerPriority")  # kube-scheduler preempts itself
    try:
        settings.GANGWEB_NAMESPACE_MODES = {scene.train: "observe"}
        settings.GANGWEB_SCHEDULER_METRICS_URL = real_cluster.scheduler_metrics
        settings.GANGWEB_SCHEDULER_METRICS_CA = str(real_cluster.ca)
        native = Scrape(real_cluster.scheduler_metrics, cafile=str(real_cluster.ca))
        before_native = native.read()
        assert before_native.state == "ok", before_native.detail
        scene.victims()
        until(lambda: running(scene.pods(scene.batch, "low"), 2), "low's pods Running", beat=BEAT)
        until(lambda: running(scene.pods(scene.batch, "mid"), 2), "mid's pods Running", beat=BEAT)
        before = uids(scene.pods(scene.batch, "low") + scene.pods(scene.batch, "mid"))
        scene.gang()
        # Only the ensurer runs meanwhile: detection reads the cluster once kube-scheduler is done, as a beat
        # would that came after its preemption (its victims deleted, the gang placed).
        until(
            lambda: running(scene.pods(scene.train, "train"), 2),
            "kube-scheduler places the gang",
            beat=(ENSURE,),
        )
        preempted = until(  # the scheduler's event broadcaster writes them a moment later
            lambda: len(e := scene.preempted_by("default-scheduler")) == 2 and e,
            "kube-scheduler's two Preempted events",
        )
        victims = {
            f"{e['regarding']['namespace']}/{e['regarding']['name']}": e["regarding"]["uid"]
            for e in preempted
        }
        assert len(victims) == 2 and set(victims) <= set(before), (victims, before)
        for key in victims:  # kube-scheduler deletes its victims (no Eviction API); wait until they are gone
            real_cluster.run(
                "wait",
                "-n",
                scene.batch,
                f"pod/{key.partition('/')[2]}",
                "--for=delete",
                f"--timeout={WAIT}s",
            )
        # The pass reads gangweb's watch caches: wait until they have seen the deletions and the events.
        assert pipeline.wait_for(
            lambda objects: not any(o["kind"] == "Pod" and object_key(o) in victims for o in objects),
            timeout=WAIT,
        ), "gangweb's pod cache never saw kube-scheduler's victims deleted"
        until(
            lambda: (
                set(victims)
                <= {
                    f"{e['regarding']['namespace']}/{e['regarding']['name']}"
                    for e in preemption_events(pipeline)
                }
            ),
            "gangweb's event watch has kube-scheduler's Preempted events",
        )
        detect_unschedulable_gangs()
        request = PreemptionRequest.objects.get(namespace=scene.train, name="train")
        assert (request.mode, request.state) == ("observe", RequestState.OBSERVED), (
            request.state,
            request.reason,
        )
        observed = Plan.objects.get(request=request, source=PlanSource.KUBE_SCHEDULER)
        assert sorted(observed.evictions) == sorted(victims)
        assert {e.pod_uid for e in observed.pod_evictions.all()} == set(victims.values())
        # Its victims were deleted before gangweb read the cluster: the state before cannot be rebuilt, so no
        # plan of gangweb's claims anything about it.
        assert not Plan.objects.filter(request=request, source=PlanSource.ENGINE).exists()
        assert "deleted" in request.reason, request.reason
        assert not Eviction.objects.filter(plan__source=PlanSource.ENGINE, namespace=scene.batch).exists()
        assert not scene.preempted_by(GANGWEB_CONTROLLER)
        # kube-scheduler's own figures, read from its /metrics, counted this pod group preemption and its two
        # victims; the request's decision view shows them beside the plans.
        django_user_model.objects.create_superuser("ops", password="s3cret-enough")
        client.login(username="ops", password="s3cret-enough")
        answer = client.get(f"/api/v1/requests/{request.pk}/")
        assert answer.status_code == 200, answer.content
        shown = answer.json()["decision"]["native"]
        assert shown["state"] == "ok", shown
        figures, was = shown["podGroup"], before_native
        assert sum(figures["attempts"].values()) >= sum(was.attempts.values()) + 1, (figures, was)
        assert figures["preemptions"] >= was.preemptions + 1, (figures, was)
        assert figures["victims"] >= was.victims + len(victims), (figures, was)
        assert figures["evaluations"] >= was.evaluations + 1, (figures, was)
        assert [t["source"] for t in answer.json()["decision"]["tried"]] == ["kube-scheduler"]
    finally:
        scene.remove()
