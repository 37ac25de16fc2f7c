"""Validating rules: gang consistency, PodGroup/Workload API rules, sizes controllers can never meet."""

from __future__ import annotations

import copy
import json

import pytest

from admission.handler import VALIDATE, Webhook
from admission.policy import AdmissionPolicy
from admission.state import CachedPodGroup, PodGroupCache
from scheduler.engine.gangkey import gang_key_of
from tests.admission.support import load_owner, load_pod, review_bytes

PODGROUP = ("scheduling.k8s.io", "v1beta1", "PodGroup")
WORKLOAD = ("scheduling.k8s.io", "v1beta1", "Workload")


@pytest.fixture
def podgroups():
    """The PodGroups "the API server holds": filled here as the watch would (admission.watch)."""
    return PodGroupCache()


@pytest.fixture
def webhook(podgroups):
    return Webhook(AdmissionPolicy(), podgroups)


def decide(webhook, obj, **kwargs) -> dict:
    return json.loads(webhook.handle(VALIDATE, review_bytes(obj, **kwargs)).body)["response"]


def grouped(fixture: str, group: str = "trainer-7f9c") -> dict:
    pod = load_pod(fixture)
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def podgroup(name="trainer-7f9c", namespace="ml-team", **spec):
    spec.setdefault("schedulingPolicy", {"gang": {"minCount": 4}})
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def test_pod_with_priority_differing_from_its_podgroup_is_rejected_with_the_fix(webhook, podgroups):
    podgroups.apply("ADDED", podgroup(priorityClassName="batch-high", priority=100000))
    pod = grouped("job-parallel.yaml")
    pod["spec"].update(priorityClassName="batch-low", priority=1000)
    response = decide(webhook, pod)
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert "priority 1000 (class batch-low) differs from PodGroup trainer-7f9c's priority 100000" in message
    assert "set priorityClassName batch-high on the pod template" in message


def test_pod_matching_its_podgroup_is_allowed(webhook, podgroups):
    podgroups.apply("ADDED", podgroup(priorityClassName="batch-high", priority=100000))
    assert decide(webhook, grouped("job-parallel.yaml"))["allowed"] is True


def test_the_podgroup_is_read_as_the_api_holds_it_now(webhook, podgroups):
    pod = grouped("job-parallel.yaml")
    podgroups.apply("ADDED", podgroup(priorityClassName="batch-low"))
    assert decide(webhook, pod)["allowed"] is False
    podgroups.apply("MODIFIED", podgroup(priorityClassName="batch-high"))
    assert decide(webhook, pod)["allowed"] is True
    podgroups.apply("ADDED", podgroup(priorityClassName="batch-low"))
    podgroups.apply("DELETED", podgroup())
    assert decide(webhook, pod)["allowed"] is True
    other_namespace = podgroup(namespace="elsewhere", priorityClassName="batch-low")
    podgroups.apply("ADDED", other_namespace)
    assert decide(webhook, pod)["allowed"] is True


def test_a_forged_podgroup_review_changes_nothing(webhook):
    """Anyone who reaches the webhook can send a PodGroup review. It is checked against the API rules and
    answered, and then forgotten: it used to be remembered with no expiry, and every real pod of that
    gang was denied from then on."""
    forged = podgroup(priorityClassName="evil", priority=1)
    assert decide(webhook, forged, kind=PODGROUP)["allowed"] is True
    assert decide(webhook, forged, kind=PODGROUP, operation="UPDATE", old=forged)["allowed"] is True
    assert decide(webhook, grouped("job-parallel.yaml"))["allowed"] is True


def test_no_review_changes_the_answer_to_another(webhook):
    """Every pod of a gang is judged on its own: an earlier member (a forged one, or simply the first one
    this replica saw) is not what a later member is compared with."""
    pod = grouped("job-parallel.yaml")
    first_answer = decide(webhook, pod, uid="same")
    odd = copy.deepcopy(pod)
    odd["spec"].update(priorityClassName="batch-low", priority=1000, schedulerName="volcano")
    odd["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    for _ in range(3):
        assert decide(webhook, odd)["allowed"] is True
    assert decide(webhook, pod, uid="same") == first_answer


def test_replicas_that_saw_different_reviews_answer_a_review_alike():
    """Two replicas with the same view of the API: one has seen a forged PodGroup review and pods of the
    gang, the other nothing. A review gets the same answer from both, byte for byte."""
    api = [("ADDED", podgroup(priorityClassName="batch-high", priority=100000))]
    replicas = [Webhook(AdmissionPolicy(), PodGroupCache()) for _ in range(2)]
    for replica in replicas:
        for event in api:
            replica.podgroups.apply(*event)
    busy, idle = replicas
    busy.handle(VALIDATE, review_bytes(podgroup(priorityClassName="evil", priority=1), kind=PODGROUP))
    odd = grouped("job-parallel.yaml")
    odd["spec"]["schedulerName"] = "volcano"
    busy.handle(VALIDATE, review_bytes(odd))
    for pod in (grouped("job-parallel.yaml"), odd):
        low = copy.deepcopy(pod)
        low["spec"].update(priorityClassName="batch-low", priority=1000)
        for candidate in (pod, low):
            body = review_bytes(candidate, uid="r-1")
            assert busy.handle(VALIDATE, body).body == idle.handle(VALIDATE, body).body
    assert decide(busy, odd)["allowed"] is True and decide(idle, odd)["allowed"] is True


def test_dry_runs_and_updates_of_pods_need_no_podgroup(webhook):
    pod = grouped("job-parallel.yaml")
    assert decide(webhook, pod, dry_run=True)["allowed"] is True
    assert decide(webhook, pod, operation="UPDATE", old=pod)["allowed"] is True


def test_cache_ignores_objects_without_a_name_and_marks_the_end_of_a_list():
    cache = PodGroupCache()
    cache.apply("ADDED", {"metadata": {"namespace": "ml-team"}})
    cache.apply("ADDED", None)
    cache.apply("BOOKMARK", podgroup())
    assert len(cache) == 0 and not cache.synced
    cache.apply("ADDED", podgroup(priority=True, priorityClassName=7))  # wrong types read as unset
    assert cache.get(gang_key_of("ml-team", "trainer-7f9c")) == CachedPodGroup(
        priority=None, priority_class=""
    )
    cache.apply("RELIST", None)
    assert cache.synced


def test_changing_the_group_on_update_is_rejected(webhook):
    old = grouped("job-parallel.yaml")
    new = grouped("job-parallel.yaml", group="other")
    response = decide(webhook, new, operation="UPDATE", old=old)
    assert response["allowed"] is False
    assert "immutable (was trainer-7f9c); delete and recreate the pod" in response["status"]["message"]


def test_gang_pod_that_names_no_group_gets_a_warning(webhook):
    response = decide(webhook, load_pod("job-parallel.yaml"))
    assert response["allowed"] is True
    assert "belongs to gang resnet-train (job) but names no PodGroup" in response["warnings"][0]


def test_min_count_above_the_lws_group_size_can_never_be_met(webhook):
    pod = grouped("lws-worker.yaml", "vllm-1")
    pod["metadata"]["annotations"]["gangweb.io/min-count"] = "5"
    message = decide(webhook, pod)["status"]["message"]
    assert (
        "its LeaderWorkerSet group has only 4 pods" in message
        and "lower gangweb.io/min-count to 4" in message
    )


def test_non_numeric_min_count_is_rejected(webhook):
    pod = load_pod("gangweb-labeled.yaml")
    pod["metadata"]["annotations"]["gangweb.io/min-count"] = "lots"
    assert "set a whole number >= 1" in decide(webhook, pod)["status"]["message"]


# --- PodGroup and Workload API rules ---------------------------------------------------------------

BAD_PODGROUPS = {
    "both policies": (
        {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}},
        "sets basic and gang; set exactly one",
    ),
    "no policy": ({"schedulingPolicy": {}}, "sets nothing; set exactly one"),
    "minCount zero": (
        {"schedulingPolicy": {"gang": {"minCount": 0}}},
        "minCount is 0; set a whole number >= 1",
    ),
    "both disruption modes": (
        {"disruptionMode": {"single": {}, "all": {}}},
        "disruptionMode sets single and all",
    ),
    "two topology keys": (
        {"schedulingConstraints": {"topology": [{"key": "rack"}, {"key": "zone"}]}},
        "keep one topology key",
    ),
    "claim without source": ({"resourceClaims": [{"name": "gpus"}]}, "set exactly one of resourceClaimName"),
    "claim with both sources": (
        {"resourceClaims": [{"name": "gpus", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]},
        "sets resourceClaimName and resourceClaimTemplateName",
    ),
    "duplicate claim names": (
        {
            "resourceClaims": [
                {"name": "g", "resourceClaimName": "a"},
                {"name": "g", "resourceClaimName": "b"},
            ]
        },
        "is used twice",
    ),
    "claim name not a DNS label": (
        {"resourceClaims": [{"name": "GPU_A", "resourceClaimName": "a"}]},
        "use a DNS label",
    ),
    "five claims": (
        {"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "a"} for i in range(5)]},
        "at most 4",
    ),
    "bad preemption policy": ({"preemptionPolicy": "Sometimes"}, "use Never or PreemptLowerPriority"),
}


@pytest.mark.parametrize("case", sorted(BAD_PODGROUPS))
def test_podgroup_breaking_api_rules_is_rejected(webhook, case):
    spec, fragment = BAD_PODGROUPS[case]
    response = decide(webhook, podgroup(**spec), kind=PODGROUP)
    assert response["allowed"] is False
    assert fragment in response["status"]["message"]


def test_valid_podgroup_is_allowed(webhook):
    spec = {
        "disruptionMode": {"all": {}},
        "schedulingConstraints": {"topology": [{"key": "rack"}]},
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}],
    }
    assert decide(webhook, podgroup(**spec), kind=PODGROUP)["allowed"] is True


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"disruptionMode": {"single": {}}}, "spec.disruptionMode is immutable"),
        ({"priorityClassName": "other"}, "spec.priorityClassName is immutable"),
        ({"schedulingPolicy": {"basic": {}}}, "changed from gang to basic"),
    ],
)
def test_podgroup_update_of_immutable_fields_is_rejected(webhook, change, fragment):
    old = podgroup(disruptionMode={"all": {}}, priorityClassName="batch-high")
    new = copy.deepcopy(old)
    new["spec"].update(change)
    response = decide(webhook, new, kind=PODGROUP, operation="UPDATE", old=old)
    assert response["allowed"] is False and fragment in response["status"]["message"]


def test_podgroup_min_count_may_change(webhook):
    old = podgroup()
    new = podgroup(schedulingPolicy={"gang": {"minCount": 2}})
    assert decide(webhook, new, kind=PODGROUP, operation="UPDATE", old=old)["allowed"] is True


def test_podgroup_delete_is_allowed(webhook):
    assert decide(webhook, None, kind=PODGROUP, operation="DELETE", old=podgroup())["allowed"] is True


def workload(templates=None, **spec):
    if templates is not None:
        spec["podGroupTemplates"] = templates
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "ml-team"},
        "spec": spec,
    }


def template(name, **fields):
    fields.setdefault("schedulingPolicy", {"gang": {"minCount": 2}})
    return {"name": name, **fields}


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        (workload([template(f"t{i}") for i in range(9)]), "at most 8 are allowed"),
        (workload([template("a"), template("a")]), "'a' is used twice"),
        (workload([template("Not_A_Label")]), "use a DNS label"),
        (workload([template("a", schedulingPolicy={"gang": {"minCount": -1}})]), "minCount is -1"),
        (workload(), "no templates; set exactly one of them"),
        (
            workload([template("a")], compositePodGroupTemplates=[{"name": "c"}]),
            "sets both podGroupTemplates",
        ),
    ],
)
def test_workload_breaking_api_rules_is_rejected(webhook, obj, fragment):
    response = decide(webhook, obj, kind=WORKLOAD)
    assert response["allowed"] is False and fragment in response["status"]["message"]


def test_workload_templates_cannot_be_added_after_creation(webhook):
    old = workload([template("a")])
    new = workload([template("a"), template("b")])
    message = decide(webhook, new, kind=WORKLOAD, operation="UPDATE", old=old)["status"]["message"]
    assert "cannot gain or lose templates after creation (added ['b'], removed [])" in message


def test_valid_workload_is_allowed(webhook):
    assert (
        decide(webhook, workload([template("leader"), template("workers")]), kind=WORKLOAD)["allowed"] is True
    )


# --- controllers whose size can never meet the gang ------------------------------------------------


def test_job_parallelism_below_min_count_is_rejected(webhook):
    job = load_owner("job-resnet-train.yaml")
    job["spec"]["template"]["metadata"] = {"annotations": {"gangweb.io/min-count": "8"}}
    response = decide(webhook, job, kind=("batch", "v1", "Job"))
    assert response["allowed"] is False
    assert (
        "asks for 8 pods together, but spec.parallelism (capped by spec.completions) allows only 4"
        in (response["status"]["message"])
    )
    assert "lower gangweb.io/min-count to 4 or raise the controller to 8" in response["status"]["message"]


def test_job_within_its_parallelism_is_allowed(webhook):
    job = load_owner("job-resnet-train.yaml")
    job["spec"]["template"]["metadata"] = {"annotations": {"gangweb.io/min-count": "4"}}
    assert decide(webhook, job, kind=("batch", "v1", "Job"))["allowed"] is True


def test_pytorchjob_min_available_above_replicas_is_rejected(webhook):
    job = load_owner("pytorchjob-gpt-neox.yaml")
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 6}}
    response = decide(webhook, job, kind=("kubeflow.org", "v1", "PyTorchJob"))
    assert response["allowed"] is False and "lower minAvailable to 4" in response["status"]["message"]


def test_jobset_with_mixed_gpu_shapes_warns(webhook):
    jobset = load_owner("jobset-llama-ft.yaml")
    jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "resources"
    ] = {"limits": {"nvidia.com/gpu": "1"}}
    response = decide(webhook, jobset, kind=("jobset.x-k8s.io", "v1alpha2", "JobSet"))
    assert response["allowed"] is True
    assert response["warnings"] == [
        "gang members ask for different GPU shapes (replicatedJobs[leader]: 1x nvidia.com/gpu; "
        "replicatedJobs[workers]: 8x nvidia.com/gpu)"
    ]


def test_lws_size_below_min_count_is_rejected(webhook):
    lws = load_owner("leaderworkerset-vllm.yaml")
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {
        "annotations": {"gangweb.io/min-count": "6"}
    }
    response = decide(webhook, lws, kind=("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"))
    assert (
        response["allowed"] is False
        and "spec.leaderWorkerTemplate.size allows only 4" in response["status"]["message"]
    )


def test_lws_templates_with_different_priority_classes_are_rejected(webhook):
    """The check the pod webhook made against "the first member" (what one replica happened to see),
    made where all of a gang's templates are seen together: the controller's object."""
    lws = load_owner("leaderworkerset-vllm.yaml")
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["priorityClassName"] = "batch-high"
    response = decide(webhook, lws, kind=("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"))
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert "different priorityClassNames (leaderTemplate: batch-high; workerTemplate: none)" in message
    assert "give every member the same priorityClassName" in message


def test_jobset_templates_with_different_schedulers_are_rejected(webhook):
    jobset = load_owner("jobset-llama-ft.yaml")
    jobset["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["schedulerName"] = "volcano"
    response = decide(webhook, jobset, kind=("jobset.x-k8s.io", "v1alpha2", "JobSet"))
    assert response["allowed"] is False
    assert (
        "different schedulerNames (replicatedJobs[leader]: default-scheduler; replicatedJobs[workers]: volcano)"
        in response["status"]["message"]
    )


def test_templates_that_agree_are_allowed(webhook):
    jobset = load_owner("jobset-llama-ft.yaml")
    for replicated in jobset["spec"]["replicatedJobs"]:
        replicated["template"]["spec"]["template"]["spec"].update(
            priorityClassName="batch-high", schedulerName="default-scheduler"
        )
    assert decide(webhook, jobset, kind=("jobset.x-k8s.io", "v1alpha2", "JobSet"))["allowed"] is True
