"""The real control plane of `make cluster` (hack/cluster, docs/kube.md): Kubernetes' own API server serves
the 1.37 scheduling APIs gangweb writes, the real kube-scheduler places pods and gangs on KWOK's nodes, and
gangweb's kube adapter lists and watches it into a snapshot the engine parses."""

from __future__ import annotations

import base64
import json
import uuid

import jsonpatch
import pytest

from admission import ensurer
from admission.handler import Webhook
from admission.labels import MIN_COUNT_ANNOTATION, POD_GROUP_LABEL
from admission.podgroups import podgroup_for_pod
from admission.policy import AdmissionPolicy
from scheduler.cluster import ClusterError
from scheduler.engine import parse_snapshot
from scheduler.kube import KubeCluster
from tests.admission.support import review_bytes

NODE = "kwok-node-0"  # the node `cluster.py up` starts with (hack/cluster/cluster.py NODE)
WAIT = "120s"  # a loaded 2-core machine: the scheduler and KWOK each take a moment


def pod(namespace: str, name: str, *, labels: dict | None = None, annotations: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ],
            # KWOK's nodes carry no taint here; the toleration is what a KWOK node usually needs.
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def through_gangwebs_mutation(obj: dict) -> dict:
    """The pod as gangweb's webhook would admit it (the JSONPatch of its mutate answer applied)."""
    answer = json.loads(Webhook(OBSERVE).handle("mutate", review_bytes(obj)).body)["response"]
    assert answer["allowed"], answer
    return jsonpatch.apply_patch(obj, json.loads(base64.b64decode(answer["patch"])))


def apply(real_cluster, *objects: dict) -> None:
    real_cluster.run(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    )


def wait_running(real_cluster, namespace: str, *names: str) -> list[dict]:
    for name in names:
        real_cluster.run(
            "wait",
            "-n",
            namespace,
            f"pod/{name}",
            "--for=jsonpath={.status.phase}=Running",
            f"--timeout={WAIT}",
        )
    return [
        json.loads(real_cluster.run("get", "-n", namespace, "pod", n, "-o", "json").stdout) for n in names
    ]


def test_the_api_server_serves_the_1_37_scheduling_apis(real_cluster):
    served = real_cluster.run("api-resources", "--api-group=scheduling.k8s.io", "-o", "wide").stdout
    rows = {line.split()[0]: line for line in served.splitlines()[1:]}
    assert "scheduling.k8s.io/v1beta1" in rows["podgroups"], served
    assert "scheduling.k8s.io/v1beta1" in rows["workloads"], served
    assert "scheduling.k8s.io/v1alpha3" in rows["compositepodgroups"], served
    version = json.loads(real_cluster.run("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"].startswith("v1.37."), version
    assert version["clientVersion"]["gitVersion"] == version["serverVersion"]["gitVersion"], version


def test_a_kwok_node_is_ready_and_a_plain_pod_runs_on_it(real_cluster, namespace):
    node = json.loads(real_cluster.run("get", "node", NODE, "-o", "json").stdout)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    apply(real_cluster, pod(namespace, "plain"))
    (running,) = wait_running(real_cluster, namespace, "plain")
    assert running["spec"]["nodeName"] == NODE  # bound by kube-scheduler: the pod named no node
    scheduled = {c["type"]: c["status"] for c in running["status"]["conditions"]}
    assert scheduled["PodScheduled"] == "True" and scheduled["Ready"] == "True"


OBSERVE = AdmissionPolicy(mode_for=lambda namespace: "observe")


def test_gangwebs_podgroup_and_gang_are_accepted_and_scheduled_together(real_cluster, namespace):
    labels = {POD_GROUP_LABEL: "trainer"}
    members = [
        through_gangwebs_mutation(
            pod(namespace, f"trainer-{i}", labels=labels, annotations={MIN_COUNT_ANNOTATION: "3"})
        )
        for i in range(3)
    ]
    assert all(m["spec"]["schedulingGroup"] == {"podGroupName": "trainer"} for m in members), members[0][
        "spec"
    ]
    group = podgroup_for_pod(members[0], OBSERVE)
    apply(real_cluster, group)
    stored = json.loads(
        real_cluster.run(
            "get", "-n", namespace, "podgroups.v1beta1.scheduling.k8s.io", "trainer", "-o", "json"
        ).stdout
    )
    assert stored["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert stored["spec"]["disruptionMode"] == group["spec"]["disruptionMode"]
    assert stored["spec"]["preemptionPolicy"] == "PreemptLowerPriority"  # from the default PriorityClass
    assert stored["spec"]["priority"] == 0
    apply(real_cluster, *members)
    running = wait_running(real_cluster, namespace, *(m["metadata"]["name"] for m in members))
    assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "trainer"} for p in running)
    assert {p["spec"]["nodeName"] for p in running} <= {NODE}


def test_the_kube_adapter_lists_and_watches_the_real_server(real_cluster, namespace):
    apply(real_cluster, pod(namespace, "before"))
    cluster = KubeCluster.from_kubeconfig(real_cluster.kubeconfig, timeout=(5.0, 30.0), watch_timeout=30)
    cluster.start(timeout=60)
    try:
        listed = cluster.snapshot_objects()
        kinds = {o["kind"] for o in listed}
        assert {"Node", "Pod"} <= kinds, kinds
        apply(real_cluster, pod(namespace, "after"))  # only a watch can bring this one
        assert cluster.wait_for(
            lambda objects: any(
                o["kind"] == "Pod" and o["metadata"]["name"] == "after" and o["spec"].get("nodeName") == NODE
                for o in objects
            ),
            timeout=120,
        ), "the adapter's watch never saw the pod scheduled"
        snapshot = parse_snapshot(cluster.snapshot_objects())
    finally:
        cluster.close()
    assert NODE in snapshot.node_index
    assert f"{namespace}/after" in snapshot.pod_index


ENFORCE = AdmissionPolicy(mode_for=lambda namespace: "enforce")


@pytest.mark.parametrize("class_policy", ["Never", "PreemptLowerPriority"])
def test_the_ensurer_creates_an_enforced_gangs_podgroup_the_real_server_accepts(
    real_cluster, namespace, class_policy
):
    # The real Priority admission refuses a PodGroup whose preemptionPolicy is not its PriorityClass's
    # (and defaults an absent one to PreemptLowerPriority): in enforce mode gangweb must write the class's.
    tier = f"tier-{namespace}"
    apply(
        real_cluster,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": tier},
            "value": 500,
            "preemptionPolicy": class_policy,
        },
    )
    try:
        labels = {POD_GROUP_LABEL: "trainer"}
        members = []
        for i in range(2):
            member = pod(namespace, f"trainer-{i}", labels=labels, annotations={MIN_COUNT_ANNOTATION: "2"})
            member["spec"]["priorityClassName"] = tier
            members.append(through_gangwebs_mutation(member))
        apply(real_cluster, *members)
        admitted = json.loads(real_cluster.run("get", "-n", namespace, "pods", "-o", "json").stdout)["items"]
        cluster = KubeCluster.from_kubeconfig(real_cluster.kubeconfig, timeout=(5.0, 30.0))
        try:
            [result] = ensurer.ensure_podgroups(cluster, admitted, ENFORCE)
        finally:
            cluster.close()
        assert result.outcome == ensurer.CREATED, result.message
        assert ("warning" in result.message) == (class_policy != "Never"), result.message
        stored = json.loads(
            real_cluster.run(
                "get", "-n", namespace, "podgroups.v1beta1.scheduling.k8s.io", "trainer", "-o", "json"
            ).stdout
        )
        assert stored["spec"]["preemptionPolicy"] == class_policy
        assert (stored["spec"]["priority"], stored["spec"]["priorityClassName"]) == (500, tier)
        # gangweb's own decision: it preempts for the gang even when the class stops kube-scheduler.
        assert stored["metadata"]["annotations"]["gangweb.io/preemption-policy"] == "PreemptLowerPriority"
        running = wait_running(real_cluster, namespace, *(m["metadata"]["name"] for m in members))
        assert {p["spec"]["nodeName"] for p in running} <= {NODE}
    finally:
        real_cluster.run("delete", "priorityclass", tier, "--wait=false", check=False)


def test_the_audit_log_says_who_listed_what(real_cluster, namespace):
    """Every LIST the API server answers is audited with its client, so a bench can say whose LISTs it
    counted (bench/realserver.py:audited_lists); a GET of one object is not a LIST."""
    import time

    from bench.realserver import audited_lists

    since = time.time()
    real_cluster.run("get", "configmaps", "-n", namespace)
    real_cluster.run("get", "namespace", namespace)
    until = time.time()
    deadline = time.monotonic() + 30  # the log is written in batches of at most a second
    while time.monotonic() < deadline:
        found = {
            k: n
            for k, n in audited_lists(real_cluster.state, since, until).items()
            if k.startswith("kubectl ")
        }
        if found:
            break
        time.sleep(0.5)
    assert found == {"kubectl gangweb-admin configmaps": 1}


def test_an_eviction_replaces_an_earlier_disruption_mark_and_a_mark_by_uid_keeps_to_its_pod(
    real_cluster, namespace
):
    """What gangweb's evictor relies on (scheduler/preemption/execution/evictor.py): the Eviction API sets its
    own ``DisruptionTarget`` over a mark made before it, a mark made after it stays, and a mark naming another
    UID is refused (the API test server answers the same: tests/kubetestserver/test_testserver.py)."""
    held = pod(namespace, "held")
    held["metadata"]["finalizers"] = ["gangweb.io/test-hold"]  # terminating, not gone, while the test looks
    held["spec"]["nodeSelector"] = {"gangweb.io/no-such-node": "true"}  # pending: KWOK leaves it alone
    apply(real_cluster, held)
    cluster = KubeCluster.from_kubeconfig(real_cluster.kubeconfig, timeout=(5.0, 30.0))
    try:
        uid = cluster.get_pod(namespace, "held")["metadata"]["uid"]

        def mark() -> tuple[str, str, str]:
            conditions = cluster.get_pod(namespace, "held")["status"].get("conditions") or []
            (target,) = [c for c in conditions if c["type"] == "DisruptionTarget"]
            return target["status"], target["reason"], target["message"]

        cluster.mark_disruption_target(namespace, "held", "gangweb: before the eviction", uid=uid)
        assert mark() == ("True", "PreemptionByScheduler", "gangweb: before the eviction")
        assert cluster.evict(namespace, "held", uid=uid).ok
        assert mark() == ("True", "EvictionByEvictionAPI", "Eviction API: evicting")
        cluster.mark_disruption_target(namespace, "held", "gangweb: after the eviction", uid=uid)
        assert mark() == ("True", "PreemptionByScheduler", "gangweb: after the eviction")
        with pytest.raises(ClusterError, match="immutable"):
            cluster.mark_disruption_target(namespace, "held", "another pod", uid=str(uuid.uuid4()))
        assert mark()[2] == "gangweb: after the eviction"
    finally:
        real_cluster.run(
            "patch", "-n", namespace, "pod", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
        )
        cluster.close()
