"""Mutation over every fixture: the patch applies, the result is a valid 1.37 pod, reinvocation is a no-op."""

from __future__ import annotations

import base64
import json

import jsonpatch
import pytest
from kubernetes_validate.utils import validate as schema_validate

from admission.handler import MUTATE, Webhook
from admission.mutate import mutate_pod
from admission.policy import AdmissionPolicy
from admission.review import parse_review
from tests.admission.support import EXPECTED, POD_FIXTURES, load_pod, review_bytes

WEBHOOK = Webhook(AdmissionPolicy())


def patch_of(pod: dict, **kwargs) -> list:
    response = json.loads(WEBHOOK.handle(MUTATE, review_bytes(pod, **kwargs)).body)["response"]
    assert response["allowed"] is True
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


@pytest.mark.parametrize("fixture", POD_FIXTURES)
def test_patched_pod_validates_and_names_the_expected_group(fixture):
    pod = load_pod(fixture)
    patched = jsonpatch.apply_patch(pod, patch_of(pod))
    schema_validate(patched, "1.37.0", strict=True)
    expected = EXPECTED[fixture]["podGroup"]
    if expected:
        assert patched["spec"]["schedulingGroup"] == {"podGroupName": expected}
        # Nothing else changes.
        del patched["spec"]["schedulingGroup"]
        assert patched == pod
    else:
        assert patched == pod


@pytest.mark.parametrize("fixture", POD_FIXTURES)
def test_reinvocation_on_own_output_yields_no_patch(fixture):
    pod = load_pod(fixture)
    once = jsonpatch.apply_patch(pod, patch_of(pod))
    assert patch_of(once) == []


def test_untouched_pods_get_no_patch():
    for fixture in POD_FIXTURES:
        if EXPECTED[fixture]["podGroup"] is None:
            assert patch_of(load_pod(fixture)) == [], fixture


@pytest.mark.parametrize("namespace", ["kube-system", "kube-node-lease", "gangweb-system"])
def test_system_and_own_namespaces_are_never_touched(namespace):
    pod = load_pod("job-parallel.yaml")
    pod["metadata"]["namespace"] = namespace
    assert patch_of(pod) == []


def test_own_namespace_follows_the_setting():
    webhook = Webhook(AdmissionPolicy(own_namespace="platform"))
    pod = load_pod("job-parallel.yaml")
    pod["metadata"]["namespace"] = "platform"
    assert "patch" not in json.loads(webhook.handle(MUTATE, review_bytes(pod)).body)["response"]


def test_opt_out_label_leaves_the_pod_alone():
    pod = load_pod("job-parallel.yaml")
    pod["metadata"]["labels"]["gangweb.io/admission"] = "disabled"
    assert patch_of(pod) == []


def test_only_create_is_mutated():
    pod = load_pod("job-parallel.yaml")
    assert patch_of(pod, operation="UPDATE", old=pod) == []


def test_dry_run_gets_the_same_answer():
    pod = load_pod("job-parallel.yaml")
    assert patch_of(pod, dry_run=True) == patch_of(pod)


def test_empty_scheduling_group_object_gets_the_name_added():
    pod = load_pod("job-parallel.yaml")
    pod["spec"]["schedulingGroup"] = {}
    patched = jsonpatch.apply_patch(pod, patch_of(pod))
    assert patched["spec"]["schedulingGroup"] == {"podGroupName": "resnet-train"}


def test_null_scheduling_group_is_replaced():
    pod = load_pod("job-parallel.yaml")
    pod["spec"]["schedulingGroup"] = None
    patched = jsonpatch.apply_patch(pod, patch_of(pod))
    schema_validate(patched, "1.37.0", strict=True)
    assert patched["spec"]["schedulingGroup"] == {"podGroupName": "resnet-train"}


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"labels": "oops"}, "request.object.metadata.labels"),
        ({"labels": {"gangweb.io/pod-group": 5}}, "request.object.metadata.labels[...]"),
        ({"annotations": ["x"]}, "request.object.metadata.annotations"),
        ({"ownerReferences": "Job"}, "request.object.metadata.ownerReferences"),
        ({"ownerReferences": [None, {"controller": True}]}, "request.object.metadata.ownerReferences[0]"),
        (
            {"ownerReferences": [{"controller": "yes"}]},
            "request.object.metadata.ownerReferences[0].controller",
        ),
    ],
)
def test_a_pod_of_the_wrong_shape_is_a_400_naming_the_field(metadata, field):
    # The API server never sends such a pod (it decodes pods into their Go types first); a caller that
    # does is told which field is wrong, for both the typed fast path and the generic one.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "ml", **metadata},
        "spec": {"containers": []},
    }
    for annotation in ("", "é"):  # an ASCII body and one that takes the generic parser
        odd = {**pod, "metadata": {**pod["metadata"], "generateName": f"x{annotation}-"}}
        answer = WEBHOOK.handle(MUTATE, review_bytes(odd))
        error = json.loads(answer.body)
        assert (answer.status, error["code"], error["reason"]) == (400, 400, "BadRequest")
        assert "not a valid Pod" in error["message"] and f"- at `{field}`" in error["message"], error[
            "message"
        ]


def test_labels_that_only_look_like_a_gang_leave_the_pod_alone():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {"containers": []},
        "metadata": {
            "namespace": "ml",
            "labels": {"leaderworkerset.sigs.k8s.io/name": "x"},
            "annotations": None,
        },
    }
    assert patch_of(pod) == []


@pytest.mark.parametrize(
    "annotation", ["scheduling.k8s.io/group-template-name", "scheduling.k8s.io/parent-compositepodgroup"]
)
@pytest.mark.parametrize("fixture", ["job-parallel.yaml", "jobset-worker.yaml", "lws-worker.yaml"])
def test_a_pod_its_controller_groups_kep6089_is_left_alone(fixture, annotation):
    """KEP-6089: a controller that makes the PodGroup from its Workload marks its objects; gangweb must not
    put the pod in a group of its own choosing as well."""
    pod = load_pod(fixture)
    assert patch_of(pod) != []  # the same pod without the annotation joins gangweb's gang
    pod["metadata"].setdefault("annotations", {})[annotation] = "workers"
    assert patch_of(pod) == []
    mutation = mutate_pod(parse_review(review_bytes(pod)), AdmissionPolicy())
    assert mutation.reason == f"its controller makes its PodGroup ({annotation}=workers)"


def test_pods_are_not_grouped_when_the_cluster_serves_no_podgroups():
    """The webhook answers without a patch, with a warning saying why, when discovery found no PodGroups."""
    from admission.state import PodGroupCache

    cache = PodGroupCache()
    cache.mark_unserved("the cluster does not serve PodGroups")
    webhook = Webhook(AdmissionPolicy(), cache)
    pod = load_pod("job-parallel.yaml")
    response = json.loads(webhook.handle(MUTATE, review_bytes(pod)).body)["response"]
    assert response["allowed"] is True and "patch" not in response
    assert response["warnings"] == [
        "gangweb left the pod out of PodGroup resnet-train: the cluster does not serve PodGroups"
    ]
