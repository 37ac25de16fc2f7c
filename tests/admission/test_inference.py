"""Gang inference and the PodGroup builder over real controller-made pods (tests/fixtures/admission)."""

from __future__ import annotations

import pytest
from kubernetes_validate.utils import validate as schema_validate

from admission.inference import infer_gang, podgroup_name
from admission.podgroups import owner_to_fetch, podgroup_for, podgroup_for_pod
from admission.policy import AdmissionPolicy
from tests.admission.support import EXPECTED, POD_FIXTURES, load_owner, load_pod

POLICY = AdmissionPolicy()


def test_every_fixture_has_an_expectation():
    assert sorted(EXPECTED) == POD_FIXTURES


@pytest.mark.parametrize("fixture", POD_FIXTURES)
def test_fixture_is_a_valid_1_37_pod(fixture):
    schema_validate(load_pod(fixture), "1.37.0", strict=True)


@pytest.mark.parametrize("fixture", [f for f in POD_FIXTURES if EXPECTED[f]["podGroup"]])
def test_gang_is_inferred_from_the_controllers_own_labels(fixture):
    pod, expected = load_pod(fixture), EXPECTED[fixture]
    gang = infer_gang(pod, pod["metadata"]["namespace"], POLICY)
    assert gang is not None
    assert (gang.name, gang.source) == (expected["podGroup"], expected["source"])


@pytest.mark.parametrize("fixture", [f for f in POD_FIXTURES if EXPECTED[f]["podGroup"]])
def test_podgroup_has_the_gang_size_and_validates_strictly(fixture):
    pod, expected = load_pod(fixture), EXPECTED[fixture]
    gang = infer_gang(pod, pod["metadata"]["namespace"], POLICY)
    owner = load_owner(expected["owner"]) if expected.get("owner") else None
    podgroup = podgroup_for(pod, gang, owner)
    schema_validate(podgroup, "1.37.0", strict=True)
    assert podgroup["spec"]["schedulingPolicy"] == {"gang": {"minCount": expected["minCount"]}}
    assert podgroup["metadata"]["name"] == expected["podGroup"]
    assert podgroup["metadata"]["namespace"] == pod["metadata"]["namespace"]


def test_podgroup_copies_priority_from_the_pod():
    pod = load_pod("job-parallel.yaml")
    podgroup = podgroup_for(pod, infer_gang(pod, "ml-team", POLICY), load_owner("job-resnet-train.yaml"))
    assert podgroup["spec"]["priority"] == 100000
    assert podgroup["spec"]["priorityClassName"] == "batch-high"


def test_podgroup_is_garbage_collected_with_its_job():
    pod = load_pod("job-parallel.yaml")
    podgroup = podgroup_for(pod, infer_gang(pod, "ml-team", POLICY), load_owner("job-resnet-train.yaml"))
    [ref] = podgroup["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"]) == (
        "Job",
        "resnet-train",
        pod["metadata"]["ownerReferences"][0]["uid"],
    )
    assert "controller" not in ref


@pytest.mark.parametrize("class_policy", ["PreemptLowerPriority", "Never", None])
def test_enforce_mode_writes_the_classs_preemption_policy_and_gangwebs_own(class_policy):
    # The pod's preemptionPolicy is its PriorityClass's (priority admission computed it); a real API server
    # refuses a PodGroup that says another one, so gangweb copies it and keeps its own in the annotation.
    pod = load_pod("job-parallel.yaml")
    pod["spec"].pop("preemptionPolicy", None)
    if class_policy:
        pod["spec"]["preemptionPolicy"] = class_policy
    podgroup = podgroup_for(
        pod, infer_gang(pod, "ml-team", AdmissionPolicy()), load_owner("job-resnet-train.yaml")
    )
    assert podgroup["spec"].get("preemptionPolicy") == class_policy
    assert podgroup["metadata"]["annotations"]["gangweb.io/preemption-policy"] == "PreemptLowerPriority"


def test_enforce_mode_keeps_never_for_a_gang_whose_pods_say_never():
    pod = load_pod("job-parallel.yaml")
    pod["metadata"].setdefault("annotations", {})["gangweb.io/preemption-policy"] = "Never"
    podgroup = podgroup_for(pod, infer_gang(pod, "ml-team", POLICY), load_owner("job-resnet-train.yaml"))
    assert podgroup["metadata"]["annotations"]["gangweb.io/preemption-policy"] == "Never"


def test_observe_mode_per_namespace_leaves_preemption_to_kube_scheduler():
    policy = AdmissionPolicy(mode_for=lambda namespace: "observe" if namespace == "ml-team" else "enforce")
    pod = load_pod("job-parallel.yaml")
    podgroup = podgroup_for(pod, infer_gang(pod, "ml-team", policy), load_owner("job-resnet-train.yaml"))
    assert podgroup["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert "gangweb.io/preemption-policy" not in podgroup["metadata"]["annotations"]


def test_disruption_mode_all_by_default_overridable_per_namespace_and_per_pod():
    pod = load_pod("job-parallel.yaml")
    owner = load_owner("job-resnet-train.yaml")
    assert podgroup_for(pod, infer_gang(pod, "ml-team", POLICY), owner)["spec"]["disruptionMode"] == {
        "all": {}
    }
    per_namespace = AdmissionPolicy(namespace_disruption_modes={"ml-team": "single"})
    assert podgroup_for(pod, infer_gang(pod, "ml-team", per_namespace), owner)["spec"]["disruptionMode"] == {
        "single": {}
    }
    labeled = load_pod("gangweb-labeled.yaml")  # annotation gangweb.io/disruption-mode: single
    assert podgroup_for(labeled, infer_gang(labeled, "research", POLICY))["spec"]["disruptionMode"] == {
        "single": {}
    }


def test_size_unknown_without_owner_is_a_clear_error():
    pod = load_pod("job-parallel.yaml")
    with pytest.raises(ValueError, match="size unknown; pass the owning Job"):
        podgroup_for(pod, infer_gang(pod, "ml-team", POLICY))


def test_gangweb_min_count_annotation_sizes_a_controller_gang():
    pod = load_pod("job-parallel.yaml")
    pod["metadata"]["annotations"] = {"gangweb.io/min-count": "2"}
    assert infer_gang(pod, "ml-team", POLICY).min_count == 2


def test_lws_groups_are_separate_gangs():
    pod = load_pod("lws-worker.yaml")
    pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"] = "0"
    assert infer_gang(pod, "serving", POLICY).name == "vllm-0"


def test_ray_worker_groups_are_separate_gangs():
    pod = load_pod("raycluster-worker.yaml")
    pod["metadata"]["labels"]["ray.io/group"] = "cpu-group"
    gang = infer_gang(pod, "ray", POLICY)
    owner = load_owner("raycluster-kuberay.yaml")
    # cpu-group has minReplicas 0: its fixed size (replicas 2) is the gang.
    assert (gang.name, podgroup_for(pod, gang, owner)["spec"]["schedulingPolicy"]["gang"]["minCount"]) == (
        "raycluster-kuberay-cpu-group",
        2,
    )


def test_legacy_job_name_label_without_a_job_owner_is_not_a_job_gang():
    pod = load_pod("deployment-pod.yaml")
    pod["metadata"]["labels"]["job-name"] = "web"
    assert infer_gang(pod, "team-a", POLICY) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("trainer", "trainer"), ("a.b-c", "a.b-c")],
)
def test_valid_names_are_kept(raw, expected):
    assert podgroup_name(raw) == expected


@pytest.mark.parametrize("raw", ["Spark_App", "x" * 300, "-lead", "UPPER", "ünï", "__"])
def test_invalid_names_become_valid_distinct_names(raw):
    name = podgroup_name(raw)
    schema_validate(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"basic": {}}},
        },
        "1.37.0",
        strict=True,
    )
    assert len(name) <= 253 and name == name.lower() and not name.startswith("-")
    assert podgroup_name(raw) == name
    assert podgroup_name(raw.swapcase()) != name or raw.swapcase() == raw


@pytest.mark.parametrize("fixture", [f for f in POD_FIXTURES if EXPECTED[f]["podGroup"]])
def test_controller_side_ensures_the_podgroup_the_webhook_named(fixture):
    """What the pipeline does after admission: fetch the owner it is told to, build the PodGroup."""
    pod, expected = load_pod(fixture), EXPECTED[fixture]
    pod["spec"]["schedulingGroup"] = {"podGroupName": expected["podGroup"]}  # as admitted
    owner = owner_to_fetch(pod, POLICY)
    if owner is None:
        assert not expected.get("owner")
        podgroup = podgroup_for_pod(pod, POLICY)
    else:
        owner_object = load_owner(expected["owner"])
        assert (owner.kind, owner.name) == (owner_object["kind"], owner_object["metadata"]["name"])
        podgroup = podgroup_for_pod(pod, POLICY, owner_object)
    assert podgroup["metadata"]["name"] == expected["podGroup"]
    assert podgroup["spec"]["schedulingPolicy"]["gang"]["minCount"] == expected["minCount"]


def test_controller_side_leaves_groups_gangweb_did_not_choose():
    pod = load_pod("already-grouped.yaml")  # names trainer-7f9c; gangweb would have said "trainer"
    assert podgroup_for_pod(pod, POLICY, load_owner("job-resnet-train.yaml")) is None
    assert podgroup_for_pod(load_pod("deployment-pod.yaml"), POLICY) is None
