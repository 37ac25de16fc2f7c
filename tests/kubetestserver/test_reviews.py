"""TokenReview and SubjectAccessReview in their real shapes, through the official client."""

from __future__ import annotations

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kubetestserver import KubeTestServer

RBAC = "rbac.authorization.k8s.io/v1"


@pytest.fixture
def api(tmp_path):
    with KubeTestServer() as server:
        configuration = client.Configuration()
        config.load_kube_config(
            str(server.write_kubeconfig(tmp_path / "kc")), client_configuration=configuration
        )
        server.load(
            [
                {
                    "apiVersion": RBAC,
                    "kind": "ClusterRole",
                    "metadata": {"name": "evictor"},
                    "rules": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}],
                },
                {
                    "apiVersion": RBAC,
                    "kind": "Role",
                    "metadata": {"name": "reader", "namespace": "team-a"},
                    "rules": [{"apiGroups": ["scheduling.k8s.io"], "resources": ["*"], "verbs": ["list"]}],
                },
                {
                    "apiVersion": RBAC,
                    "kind": "RoleBinding",
                    "metadata": {"name": "ci-reads", "namespace": "team-a"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}],
                },
                {
                    "apiVersion": RBAC,
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": "sre-evicts"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "evictor",
                    },
                    "subjects": [{"kind": "Group", "name": "sre"}],
                },
            ]
        )
        server.add_token(
            "good", "system:serviceaccount:tools:ci", groups=["system:serviceaccounts"], uid="u-1"
        )
        with client.ApiClient(configuration) as api_client:
            yield api_client


def sar(api, user: str, groups: list[str], **attributes) -> client.V1SubjectAccessReview:
    body = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user, groups=groups, resource_attributes=client.V1ResourceAttributes(**attributes)
        )
    )
    return client.AuthorizationV1Api(api).create_subject_access_review(body)


def test_token_review_answers_who_a_token_is(api):
    review = client.AuthenticationV1Api(api).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token="good"))
    )
    assert review.kind == "TokenReview" and review.status.authenticated
    assert review.status.user.username == "system:serviceaccount:tools:ci" and review.status.user.uid == "u-1"
    assert set(review.status.user.groups) == {"system:serviceaccounts", "system:authenticated"}
    unknown = client.AuthenticationV1Api(api).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token="bad"))
    )
    assert not unknown.status.authenticated and unknown.status.error


def test_subject_access_review_follows_role_and_cluster_bindings(api):
    ci = "system:serviceaccount:tools:ci"
    assert sar(
        api, ci, [], namespace="team-a", verb="list", group="scheduling.k8s.io", resource="podgroups"
    ).status.allowed
    assert not sar(
        api, ci, [], namespace="team-b", verb="list", group="scheduling.k8s.io", resource="podgroups"
    ).status.allowed
    assert not sar(
        api, ci, [], namespace="", verb="list", group="scheduling.k8s.io", resource="podgroups"
    ).status.allowed
    assert not sar(
        api, ci, [], namespace="team-a", verb="delete", group="scheduling.k8s.io", resource="podgroups"
    ).status.allowed
    evict = {"verb": "create", "group": "", "resource": "pods", "subresource": "eviction"}
    allowed = sar(api, "sam", ["sre"], namespace="team-z", **evict)
    assert allowed.status.allowed and "sre-evicts" in allowed.status.reason
    assert sar(api, "sam", ["sre"], namespace="", **evict).status.allowed
    assert not sar(api, "sam", [], namespace="team-z", **evict).status.allowed
    assert sar(api, "root", ["system:masters"], namespace="x", verb="delete", resource="nodes").status.allowed


def test_a_review_without_attributes_is_invalid(api):
    with pytest.raises(ApiException) as refused:
        client.AuthorizationV1Api(api).create_subject_access_review(
            client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(user="sam"))
        )
    assert refused.value.status == 422
