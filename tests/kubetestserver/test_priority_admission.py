"""A PodGroup created over HTTP meets the Priority admission a real 1.37 kube-apiserver applies (the
answers below are the real server's, docs/kube.md "Where the API test server disagrees")."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kubetestserver import KubeTestServer


def priority_class(name: str, value: int, policy: str, **extra) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
        **extra,
    }


def group(name: str, **spec) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec},
    }


@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    with KubeTestServer() as server:
        server.load([priority_class("tier-never", 1000, "Never")])
        configuration = client.Configuration()
        kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("kc") / "kc")
        config.load_kube_config(str(kubeconfig), client_configuration=configuration)
        yield client.SchedulingV1beta1Api(client.ApiClient(configuration)), server


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"preemptionPolicy": "Never"},
            "the string value of PreemptionPolicy (Never) must not be provided in pod group spec; priority "
            "admission controller computed PreemptLowerPriority from the given PriorityClass name",
        ),
        (
            # defaulting fills PreemptLowerPriority first: a group of a Never class must say Never itself
            {"priorityClassName": "tier-never"},
            "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod group "
            "spec; priority admission controller computed Never from the given PriorityClass name",
        ),
        (
            {"priorityClassName": "tier-never", "preemptionPolicy": "Never", "priority": 5},
            "priority set in the pod group (5) must match the priority computed (1000) based on the "
            "priority class set in the spec",
        ),
        ({"priorityClassName": "nosuch"}, "no PriorityClass with name nosuch was found"),
    ],
)
def test_a_group_that_differs_from_its_class_is_forbidden(groups, spec, message):
    api, _ = groups
    with pytest.raises(ApiException) as caught:
        api.create_namespaced_pod_group("default", group("refused", **spec))
    body = json.loads(caught.value.body)
    assert (caught.value.status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == f'podgroups.scheduling.k8s.io "refused" is forbidden: {message}'
    assert api.list_namespaced_pod_group("default").items == []


def test_admission_fills_priority_and_policy_from_the_class(groups):
    api, _ = groups
    spec = api.api_client.sanitize_for_serialization(
        api.create_namespaced_pod_group(
            "default", group("never", priorityClassName="tier-never", preemptionPolicy="Never")
        ).spec
    )
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    plain = api.create_namespaced_pod_group("default", group("plain")).spec
    assert (plain.priority, plain.preemption_policy, plain.priority_class_name) == (
        0,
        "PreemptLowerPriority",
        None,
    )
    for name in ("never", "plain"):
        api.delete_namespaced_pod_group(name, "default")
