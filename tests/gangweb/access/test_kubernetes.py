"""Kubernetes identities against the Kubernetes API test server: TokenReview says who, SubjectAccessReview
(over the server's RBAC objects) what, both cached; "every namespace I may see" at 5,000 namespaces."""

from __future__ import annotations

import pytest
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from gangweb.access import kube
from gangweb.access.authentication import DEFAULT_AUTHENTICATION_CLASSES
from gangweb.access.scope import scope_for
from gangweb.access.ttlcache import TTLCache
from kubetestserver import KubeTestServer
from kubetestserver.reviews import mint_token
from scheduler.kube import KubeCluster
from scheduler.preemption import runtime

pytestmark = pytest.mark.django_db

READ_PODGROUPS = {
    "apiGroups": ["scheduling.k8s.io"],
    "resources": ["podgroups"],
    "verbs": ["get", "list", "watch"],
}
EVICT = {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}
# Bearer tokens in a service account token's shape (gangweb reviews no other shape).
SA_TOKEN, OPERATOR_TOKEN, ADMIN_TOKEN, TESS_TOKEN = (
    mint_token(name) for name in ("ci", "olga", "root", "tess")
)


def cluster_role(name: str, *rules: dict) -> dict:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": list(rules),
    }


def binding(namespace: str | None, role: str, subject: dict, name: str = "") -> dict:
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    meta = {"name": name or f"{role}-{subject['name']}".replace(":", "-")}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }


def user(name: str) -> dict:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


@pytest.fixture
def server(tmp_path, settings):
    settings.DEMO = False
    settings.GANGWEB_K8S_REVIEW_TTL_SECONDS = 60
    kube.clear_caches()
    with KubeTestServer() as server:
        server.load(
            [
                cluster_role("gangweb-viewer", READ_PODGROUPS),
                cluster_role("gangweb-operator", READ_PODGROUPS, EVICT),
            ]
        )
        runtime.set_cluster(KubeCluster.from_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig")))
        yield server
        runtime.reset_cluster()
        kube.clear_caches()


def reviews(server) -> tuple[int, int]:
    return len(server.requests("/tokenreviews", "POST")), len(
        server.requests("/subjectaccessreviews", "POST")
    )


def drf_request(token: str) -> Request:
    from django.utils.module_loading import import_string

    request = APIRequestFactory().get("/api/requests/", HTTP_AUTHORIZATION=f"Bearer {token}")
    return Request(request, authenticators=[import_string(path)() for path in DEFAULT_AUTHENTICATION_CLASSES])


def test_a_service_account_bound_in_one_namespace_views_there_and_nowhere_else(server, client):
    server.add_token(SA_TOKEN, "system:serviceaccount:team-a:ci", groups=["system:serviceaccounts"])
    server.load(
        [
            binding(
                "team-a", "gangweb-viewer", {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"}
            ),
            binding("team-b", "gangweb-operator", user("someone-else")),
        ]
    )
    scope = scope_for(drf_request(SA_TOKEN))
    assert scope.user == "system:serviceaccount:team-a:ci" and not scope.all_namespaces
    assert scope.namespaces() == {"team-a"}
    assert scope.role_in("team-a") == "viewer" and not scope.may("approve", "team-a")
    assert not scope.sees("team-b")
    response = client.get("/api/requests/", HTTP_AUTHORIZATION=f"Bearer {SA_TOKEN}")
    assert response.status_code == 200


def test_eviction_rights_make_an_operator_and_a_cluster_binding_sees_everywhere(server):
    server.add_token(OPERATOR_TOKEN, "olga", groups=["ml-platform"])
    server.add_token(ADMIN_TOKEN, "root", groups=["platform-admins"])
    server.load(
        [
            binding("team-a", "gangweb-operator", {"kind": "Group", "name": "ml-platform"}),
            binding(None, "gangweb-operator", {"kind": "Group", "name": "platform-admins"}),
        ]
    )
    operator = scope_for(drf_request(OPERATOR_TOKEN))
    assert operator.role_in("team-a") == "operator" and operator.may("cancel", "team-a")
    before = reviews(server)
    everywhere = scope_for(drf_request(ADMIN_TOKEN))
    assert (
        everywhere.all_namespaces and everywhere.namespaces() is None and everywhere.may("approve", "team-z")
    )
    # One TokenReview and the cluster-wide pair of SubjectAccessReviews, whatever the namespace count.
    assert reviews(server) == (before[0] + 1, before[1] + 2)


def test_unknown_tokens_are_401_with_both_challenges(server, client):
    response = client.get("/api/requests/", HTTP_AUTHORIZATION="Bearer not-a-known-token")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="gangweb", Basic realm="gangweb"'


def test_on_a_simulated_cluster_a_token_that_is_not_gangwebs_is_401_not_503(client, settings):
    """No API server could vouch for it: bad credentials (401), not "cannot check them now" (503)."""
    from scheduler.simulation import SimulatedCluster

    settings.DEMO = False
    runtime.set_cluster(SimulatedCluster(nodes=2))
    try:
        response = client.get("/api/v1/", HTTP_AUTHORIZATION=f"Bearer {mint_token('someone')}")
    finally:
        runtime.reset_cluster()
    assert response.status_code == 401, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert "no Kubernetes API server" in response.json()["detail"]
    assert response["WWW-Authenticate"] == 'Bearer realm="gangweb", Basic realm="gangweb"'


def test_a_second_request_within_the_ttl_makes_no_review(server, client, settings):
    server.add_token(SA_TOKEN, "system:serviceaccount:team-a:ci")
    server.load(
        [
            binding(
                "team-a", "gangweb-operator", {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"}
            )
        ]
    )
    first = scope_for(drf_request(SA_TOKEN))
    assert first.role_in("team-a") == "operator" and first.namespaces() == {"team-a"}
    after_first = reviews(server)
    assert after_first[0] == 1 and after_first[1] >= 3  # cluster-wide (denied), team-a's two
    second = scope_for(drf_request(SA_TOKEN))
    assert second.role_in("team-a") == "operator" and second.namespaces() == {"team-a"}
    assert reviews(server) == after_first
    assert client.get("/api/requests/", HTTP_AUTHORIZATION=f"Bearer {SA_TOKEN}").status_code == 200
    assert reviews(server) == after_first

    settings.GANGWEB_K8S_REVIEW_TTL_SECONDS = 0  # answers expire at once: each request reviews again
    kube.clear_caches()
    scope_for(drf_request(SA_TOKEN)).role_in("team-a")
    scope_for(drf_request(SA_TOKEN)).role_in("team-a")
    assert reviews(server)[0] == after_first[0] + 2


def test_every_namespace_i_may_see_costs_no_review_per_namespace_at_5000_namespaces(server):
    server.add_token(TESS_TOKEN, "tess", groups=["team-7"])
    others = [binding(f"ns-{i:04d}", "gangweb-viewer", user(f"owner-{i}")) for i in range(5000)]
    mine = [
        binding("ns-0042", "gangweb-viewer", user("tess"), name="tess-view"),
        binding("ns-4711", "gangweb-operator", {"kind": "Group", "name": "team-7"}, name="team-7-operate"),
    ]
    server.load(others + mine)
    scope = scope_for(drf_request(TESS_TOKEN))
    assert scope.namespaces() == {"ns-0042", "ns-4711"}
    assert scope.role_in("ns-4711") == "operator" and scope.role_in("ns-0042") == "viewer"
    token_reviews, access_reviews = reviews(server)
    # 1 cluster-wide review (denied: no eviction check), then at most 2 per candidate namespace.
    assert token_reviews == 1 and access_reviews <= 1 + 2 * 2, access_reviews
    # A namespace asked about directly is reviewed on its own (access a non-RBAC authorizer might give).
    assert not scope.sees("ns-0001")
    assert reviews(server)[1] == access_reviews + 1


def test_a_token_of_another_shape_is_refused_without_a_review(server, client):
    for token in ("not-a-known-token", "a.b.c", "x" * 40, "abcdef.0123456789ABCDEF"):
        response = client.get("/api/requests/", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 401 and "shaped like a Kubernetes token" in response.json()["detail"]
    assert reviews(server) == (0, 0)
    # A bootstrap token's shape is reviewed (and, unknown to this server, rejected).
    assert (
        client.get("/api/requests/", HTTP_AUTHORIZATION="Bearer abcdef.0123456789abcdef").status_code == 401
    )
    assert reviews(server) == (1, 0)


def test_eks_tokens_are_reviewed_and_opaque_ones_only_when_the_admin_says_so(server, client, settings):
    """EKS users (`aws eks get-token`) sign in as they are; a static token file's users once enabled."""
    eks = "k8s-aws-v1." + "aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_QWN0aW9uPUdldENhbGxlcklkZW50aXR5"
    opaque = "31ada4fd-adec-460c-809a-9e56ceb75269"
    server.add_token(eks, "arn:aws:iam::1:role/dev")
    server.add_token(opaque, "static-user")
    server.load([binding("team-a", "gangweb-viewer", user("arn:aws:iam::1:role/dev"))])
    server.load([binding("team-a", "gangweb-viewer", user("static-user"), name="static")])
    assert who(eks) == "arn:aws:iam::1:role/dev"
    assert who(opaque) is None and reviews(server)[0] == 1
    settings.GANGWEB_K8S_OPAQUE_TOKENS = True
    assert who(opaque) == "static-user" and reviews(server)[0] == 2
    # Still a shape: a credential with a space or a quote is no token68, whatever the setting.
    assert who('x" or "1"="1 and more') is None and reviews(server)[0] == 2


def who(token: str) -> str | None:
    """The user a request with ``token`` is, through gangweb's authentication; None when refused."""
    try:
        return scope_for(drf_request(token)).user
    except exceptions.AuthenticationFailed:
        return None


def test_a_full_token_cache_pushes_out_the_least_recently_used_identity_only(server, monkeypatch):
    monkeypatch.setattr(kube, "_tokens", TTLCache(2))
    first, second, third = (mint_token(name) for name in ("first", "second", "third"))
    for token, name in ((first, "first"), (second, "second"), (third, "third")):
        server.add_token(token, name)
    assert [who(t) for t in (first, second, first, third)] == ["first", "second", "first", "third"]
    assert reviews(server)[0] == 3  # "first" was used again just before "third" arrived
    assert (who(first), who(third)) == ("first", "third")
    assert reviews(server)[0] == 3
    assert who(second) == "second"  # the one pushed out
    assert reviews(server)[0] == 4


def test_tokens_the_api_server_rejected_never_push_out_an_identity(server, settings, monkeypatch):
    settings.GANGWEB_K8S_REVIEW_FAILURES = 1000
    monkeypatch.setattr(kube, "_tokens", TTLCache(4))
    server.add_token(SA_TOKEN, "system:serviceaccount:team-a:ci")
    assert who(SA_TOKEN) == "system:serviceaccount:team-a:ci"
    assert [who(mint_token("made-up")) for _ in range(20)] == [None] * 20
    before = reviews(server)[0]
    assert who(SA_TOKEN) == "system:serviceaccount:team-a:ci"
    assert reviews(server)[0] == before
