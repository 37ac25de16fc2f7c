"""The PodGroup ensurer on an in-memory cluster: which groups it creates, from what, and what it leaves alone."""

from __future__ import annotations

import copy

import pytest
from kubernetes_validate.utils import validate as schema_validate

from admission import ensurer
from admission.policy import AdmissionPolicy
from scheduler.cluster import ClusterError
from tests.admission.ensurer.memory import MemoryCluster
from tests.admission.support import EXPECTED, POD_FIXTURES, load_owner, load_pod

ENFORCE = AdmissionPolicy()
GANG_FIXTURES = [f for f in POD_FIXTURES if EXPECTED[f]["podGroup"]]


def admitted(fixture: str, name: str | None = None, **metadata) -> dict:
    """The fixture pod as the API server stores it after the webhook named its group."""
    pod = load_pod(fixture)
    pod["metadata"]["name"] = name or pod["metadata"].get("name") or pod["metadata"]["generateName"] + "x1"
    pod["metadata"].update(metadata)
    pod["spec"]["schedulingGroup"] = {"podGroupName": EXPECTED[fixture]["podGroup"]}
    pod["status"] = {"phase": "Pending"}
    return pod


def cluster_with(fixture: str, *pods: dict) -> MemoryCluster:
    owner = EXPECTED[fixture].get("owner")
    return MemoryCluster([*(pods or [admitted(fixture)]), *([load_owner(owner)] if owner else [])])


def podgroups(cluster: MemoryCluster) -> list[dict]:
    return [
        o
        for o in cluster.snapshot_objects()
        if o["kind"] == "PodGroup" and o["apiVersion"].startswith("scheduling.k8s.io/")
    ]


@pytest.mark.parametrize("fixture", GANG_FIXTURES)
def test_creates_the_group_each_fixture_pod_names_sized_from_its_owner(fixture):
    cluster = cluster_with(fixture)
    [result] = ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    assert result.outcome == ensurer.CREATED, result.message
    [group] = podgroups(cluster)
    schema_validate(group, "1.37.0", strict=True)
    assert group["metadata"]["name"] == EXPECTED[fixture]["podGroup"]
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == EXPECTED[fixture]["minCount"]
    # The class's policy as the pod carries it (a real server refuses any other), gangweb's in the annotation.
    pod = next(o for o in cluster.snapshot_objects() if o["kind"] == "Pod")
    assert group["spec"].get("preemptionPolicy") == pod["spec"].get("preemptionPolicy")
    assert group["metadata"]["annotations"]["gangweb.io/preemption-policy"] == "PreemptLowerPriority"
    assert group["metadata"]["annotations"]["gangweb.io/gang-source"] == EXPECTED[fixture]["source"]
    # A second pass finds nothing missing and writes nothing.
    assert ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE) == []


def test_observe_namespaces_keep_the_pods_own_preemption_policy():
    cluster = cluster_with("job-parallel.yaml")
    policy = AdmissionPolicy(mode_for=lambda namespace: "observe" if namespace == "ml-team" else "enforce")
    ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), policy)
    [group] = podgroups(cluster)
    assert group["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert "gangweb.io/preemption-policy" not in group["metadata"]["annotations"]


def test_one_group_for_many_pods_and_the_owner_is_read_once():
    pods = [admitted("job-parallel.yaml", f"resnet-train-{i}") for i in range(4)]
    cluster = cluster_with("job-parallel.yaml", *pods)
    reads = []
    original = cluster.get_object
    cluster.get_object = lambda *args: reads.append(args) or original(*args)
    [result] = ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    assert (result.outcome, result.pods, len(reads)) == (ensurer.CREATED, 4, 1)


def test_a_group_created_meanwhile_is_success_without_a_second_object():
    cluster = cluster_with("job-parallel.yaml")
    stale = cluster.snapshot_objects()
    ensurer.ensure_podgroups(cluster, stale, ENFORCE)
    [again] = ensurer.ensure_podgroups(cluster, stale, ENFORCE)  # the old snapshot still misses it: 409
    assert again.outcome == ensurer.EXISTS
    assert len(podgroups(cluster)) == 1


def test_an_existing_group_is_left_as_it_is():
    cluster = cluster_with("job-parallel.yaml")
    ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    cluster.creates.clear()
    assert ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE) == []
    assert cluster.creates == []


@pytest.mark.parametrize("namespace", ["kube-system", "kube-node-lease", "gangweb-system", "skipped-team"])
def test_namespaces_the_webhook_never_touches_are_never_written(namespace):
    cluster = cluster_with("gangweb-labeled.yaml", admitted("gangweb-labeled.yaml", namespace=namespace))
    policy = AdmissionPolicy(extra_skipped_namespaces=frozenset({"skipped-team"}))
    assert ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), policy) == []
    assert podgroups(cluster) == []


def test_finished_terminating_and_opted_out_pods_need_no_group():
    done = admitted("gangweb-labeled.yaml", "a")
    done["status"]["phase"] = "Succeeded"
    leaving = admitted("gangweb-labeled.yaml", "b", deletionTimestamp="2026-11-30T10:00:00Z")
    opted = admitted("gangweb-labeled.yaml", "c")
    opted["metadata"]["labels"]["gangweb.io/admission"] = "disabled"
    cluster = cluster_with("gangweb-labeled.yaml", done, leaving, opted)
    assert ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE) == []


def test_a_group_the_user_chose_is_not_gangwebs_to_create():
    pod = admitted("job-parallel.yaml")
    pod["spec"]["schedulingGroup"]["podGroupName"] = "hand-made"
    cluster = cluster_with("job-parallel.yaml", pod)
    [result] = ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    assert result.outcome == ensurer.NOT_OURS and "hand-made" in result.message
    assert podgroups(cluster) == []


def test_a_missing_owner_waits_and_the_next_pass_creates_the_group():
    cluster = MemoryCluster([admitted("job-parallel.yaml")])
    [result] = ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    assert result.outcome == ensurer.WAITING and "Job ml-team/resnet-train" in result.message
    cluster.create_object(load_owner("job-resnet-train.yaml"))
    [result] = ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    assert result.outcome == ensurer.CREATED


def test_a_refused_write_is_reported_and_the_other_gangs_still_get_their_groups():
    cluster = MemoryCluster(
        [admitted("job-parallel.yaml"), load_owner("job-resnet-train.yaml"), admitted("gangweb-labeled.yaml")]
    )
    create = cluster.create_object

    def refuse_resnet(obj):
        if obj["metadata"]["name"] == "resnet-train":
            raise ClusterError("creating PodGroup ml-team/resnet-train: 403 forbidden", code=403)
        return create(obj)

    cluster.create_object = refuse_resnet
    results = {r.name: r for r in ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)}
    assert results["resnet-train"].outcome == ensurer.FAILED and "403" in results["resnet-train"].message
    assert results["climate-sim"].outcome == ensurer.CREATED


def test_pods_are_not_changed_by_a_pass():
    cluster = cluster_with("jobset-worker.yaml")
    before = copy.deepcopy([o for o in cluster.snapshot_objects() if o["kind"] == "Pod"])
    ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    assert [o for o in cluster.snapshot_objects() if o["kind"] == "Pod"] == before


@pytest.mark.parametrize(
    "mark",
    [
        {"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}}}},
        {"metadata": {"annotations": {"scheduling.k8s.io/group-template-name": "workers"}}},
    ],
    ids=["spec.scheduling", "group-template-name"],
)
def test_a_job_whose_controller_makes_its_podgroup_gets_none_from_gangweb(mark):
    """KEP-6089: a Job with .spec.scheduling (or a delegated group template) has its PodGroup made by the
    Job controller; the ensurer must not create a second one for the same pods."""
    owner = load_owner(EXPECTED["job-parallel.yaml"]["owner"])
    for part, fields in mark.items():
        owner[part].update(fields)
    cluster = MemoryCluster([admitted("job-parallel.yaml"), owner])
    [result] = ensurer.ensure_podgroups(cluster, cluster.snapshot_objects(), ENFORCE)
    assert result.outcome == ensurer.NOT_OURS
    assert (
        "makes its PodGroup" in result.message and f"Job {owner['metadata']['namespace']}/" in result.message
    )
    assert podgroups(cluster) == []
