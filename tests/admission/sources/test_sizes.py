"""One size rule per controller: the PodGroup's minCount and the validating webhook's "can never start" check
read the same function of the source (admission/sources), so they cannot disagree.

The JobSet rule (admission/sources/jobset.py): the gang is the member replicated jobs the JobSet creates
first. A job that ``dependsOn`` another member, or comes after the first under ``startupPolicyOrder: InOrder``,
is created only once that member is Ready or Complete (the JobSet API), which cannot happen while the gang
waits for it: counting it would make the minCount unreachable.
"""

from __future__ import annotations

import copy
import json

import pytest

from admission.controllers import controller_problems
from admission.handler import VALIDATE, Webhook
from admission.inference import infer_gang
from admission.podgroups import podgroup_for
from admission.policy import AdmissionPolicy
from admission.sources import controller_source, jobset, kubeflow
from tests.admission.support import EXPECTED, load_owner, load_pod, review_bytes

POLICY = AdmissionPolicy()
JOBSET_KIND = ("jobset.x-k8s.io", "v1alpha2", "JobSet")


def reviewed_source(owner: dict):
    return controller_source(owner["apiVersion"].rpartition("/")[0], owner["kind"])


# Pod fixtures whose gang is sized from a controller the webhook also reviews.
REVIEWED = [
    f
    for f in sorted(EXPECTED)
    if EXPECTED[f].get("owner") and reviewed_source(load_owner(EXPECTED[f]["owner"]))
]


def min_count(pod: dict, owner: dict) -> int:
    gang = infer_gang(pod, pod["metadata"]["namespace"], POLICY)
    return podgroup_for(pod, gang, owner)["spec"]["schedulingPolicy"]["gang"]["minCount"]


def capacity(owner: dict) -> int:
    return reviewed_source(owner).controller.capacity(owner["spec"]).pods


def review(obj: dict, kind: tuple[str, str, str]) -> dict:
    return json.loads(Webhook(POLICY).handle(VALIDATE, review_bytes(obj, kind=kind)).body)["response"]


def test_the_reviewed_fixtures_cover_job_jobset_trainjob_and_kubeflow():
    assert {EXPECTED[f]["source"] for f in REVIEWED} >= {"job", "jobset", "trainjob", "kubeflow"}


@pytest.mark.parametrize("fixture", REVIEWED)
def test_the_podgroup_size_is_what_the_controller_runs_at_once(fixture):
    owner = load_owner(EXPECTED[fixture]["owner"])
    assert min_count(load_pod(fixture), owner) == capacity(owner) == EXPECTED[fixture]["minCount"]


def leader_and_workers(**workers) -> dict:
    jobset_object = load_owner("jobset-llama-ft.yaml")  # leader: 1 pod; workers: 2 x 4 pods
    jobset_object["spec"]["replicatedJobs"][1].update(workers)
    return jobset_object


@pytest.mark.parametrize("status", ["Ready", "Complete"])
def test_a_jobset_job_waiting_for_another_member_is_not_in_the_starting_gang(status):
    waiting = leader_and_workers(dependsOn=[{"name": "leader", "status": status}])
    assert min_count(load_pod("jobset-worker.yaml"), waiting) == capacity(waiting) == 1
    assert (
        min_count(load_pod("jobset-worker.yaml"), leader_and_workers()) == capacity(leader_and_workers()) == 9
    )


def test_an_in_order_jobset_starts_with_its_first_job_alone():
    in_order = leader_and_workers()
    in_order["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    assert min_count(load_pod("jobset-worker.yaml"), in_order) == capacity(in_order) == 1
    in_order["spec"]["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    assert capacity(in_order) == 9


def test_a_min_count_beyond_the_starting_gang_is_rejected_at_review():
    waiting = leader_and_workers(dependsOn=[{"name": "leader", "status": "Ready"}])
    waiting["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"] = {
        "annotations": {"gangweb.io/min-count": "9"}
    }
    response = review(waiting, JOBSET_KIND)
    assert response["allowed"] is False
    assert (
        "asks for 9 pods together, but the replicas x parallelism of the spec.replicatedJobs that start "
        "together" in response["status"]["message"]
    )
    assert "allows only 1 at once" in response["status"]["message"]


def test_a_trainjob_gang_is_its_trainer_step_and_only_its_templates_are_compared():
    mnist = load_owner("jobset-mnist.yaml")  # dataset-initializer (no gang member), node: 4 pods after it
    assert capacity(mnist) == 4
    assert [t.where for t in jobset.SOURCE.controller.templates(mnist["spec"])] == ["replicatedJobs[node]"]
    mnist["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["priorityClassName"] = "other"
    assert review(mnist, JOBSET_KIND)["allowed"] is True  # the initializer runs before the gang, alone


def test_kubeflow_min_available_sizes_the_gang_within_its_replicas():
    job = load_owner("pytorchjob-gpt-neox.yaml")  # Master 1 + Worker 3
    assert (kubeflow.gang_size(job["spec"]), capacity(job)) == (4, 4)
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 2}}
    assert (min_count(load_pod("pytorchjob-worker.yaml"), job), capacity(job)) == (2, 4)
    for not_a_size in (True, 0, -1, "3"):
        job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = not_a_size
        assert kubeflow.gang_size(job["spec"]) == 4


def test_a_malformed_kubeflow_replica_spec_counts_as_the_default_instead_of_failing():
    job = copy.deepcopy(load_owner("pytorchjob-gpt-neox.yaml"))
    job["spec"]["pytorchReplicaSpecs"]["Worker"] = "three"
    assert kubeflow.total_replicas(job["spec"]) == 2  # Master 1 + the default 1
    assert controller_problems(controller_source("kubeflow.org", "PyTorchJob"), job) == ([], [])
