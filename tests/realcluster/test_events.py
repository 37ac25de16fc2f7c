"""The ledger's Kubernetes Events on the real control plane: real kubectl's ``describe podgroup`` shows
what gangweb decided about the preemptor and did to the victims, counted in one series per PodGroup."""

from __future__ import annotations

import time

import pytest

from admission.labels import MIN_COUNT_ANNOTATION, POD_GROUP_LABEL
from admission.podgroups import podgroup_for_pod
from scheduler.cluster import current_objects
from scheduler.kube import KubeCluster
from scheduler.preemption import kubeevents, runtime
from tests.realcluster.test_control_plane import OBSERVE, apply, pod
from tests.scheduler.preemption.test_kube_events import drive_a_plan

pytestmark = pytest.mark.django_db(transaction=True)


def podgroup(ns: str, name: str) -> dict:
    member = pod(ns, f"{name}-0", labels={POD_GROUP_LABEL: name}, annotations={MIN_COUNT_ANNOTATION: "2"})
    return podgroup_for_pod(member, OBSERVE)


def test_kubectl_describe_podgroup_shows_gangwebs_events(real_cluster, namespace):
    apply(real_cluster, podgroup(namespace, "train"), podgroup(namespace, "low"))
    cluster = KubeCluster.from_kubeconfig(real_cluster.kubeconfig, timeout=(5.0, 30.0), watch_timeout=30)
    cluster.start(timeout=60)
    runtime.set_cluster(cluster)
    try:
        deadline = time.monotonic() + 60  # the Events name the PodGroups' UIDs, read from the watch cache
        while time.monotonic() < deadline:
            seen = {
                o["metadata"]["name"]
                for o in current_objects(cluster)
                if o["kind"] == "PodGroup" and o["metadata"]["namespace"] == namespace
            }
            if seen >= {"train", "low"}:
                break
            time.sleep(0.1)
        request, plan = drive_a_plan(f"{namespace}/train", {f"{namespace}/low": ["low-0", "low-1", "low-2"]})
        assert kubeevents.flush(60)
    finally:
        runtime.reset_cluster()
        cluster.close()  # a cluster handed to set_cluster is its giver's to close
    ids = f"request {request.pk}, plan {plan.pk}"

    train = real_cluster.run(
        "describe", "-n", namespace, "podgroups.v1beta1.scheduling.k8s.io", "train"
    ).stdout
    events = train[train.index("Events:") :]
    assert "PreemptionPlanned" in events and "PreemptionExecuted" in events, train
    assert ids in events and "gangweb.io/preemption" in events, train

    low = real_cluster.run("describe", "-n", namespace, "podgroups.v1beta1.scheduling.k8s.io", "low").stdout
    events = low[low.index("Events:") :]
    [line] = [row for row in events.splitlines() if "Preempted" in row]
    assert f"PodGroup {namespace}/train ({ids})" in line, low
    assert "(x3 over" in line, low  # one Event, its series counting the three pods
