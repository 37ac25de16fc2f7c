"""Two people, one name: the local user ``oper-b`` and the Kubernetes user ``oper-b`` decide requests in
team-llm through the API; the ledger and the API name each with its kind, and show until when a plan
waits. Kubernetes tokens are reviewed by the Kubernetes API test server, local ones are the product's own
(Basic, and a token from ``manage.py access token``)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from gangweb.access import kube
from kubetestserver import KubeTestServer
from kubetestserver.reviews import mint_token
from scheduler.kube import KubeCluster
from scheduler.preemption import ledger, runtime
from scheduler.preemption.ledger import approvals
from scheduler.preemption.models import LedgerEntry, PreemptionRequest
from tests.gangweb.access.test_kubernetes import EVICT, READ_PODGROUPS, binding, cluster_role, user
from tests.gangweb.api.v1.conftest import basic, token_reader

pytestmark = pytest.mark.django_db

NS = "team-llm"


@pytest.fixture
def kube_api(tmp_path, settings):
    settings.GANGWEB_K8S_REVIEW_TTL_SECONDS = 60
    kube.clear_caches()
    with KubeTestServer() as server:
        server.load([cluster_role("gangweb-operator", READ_PODGROUPS, EVICT)])
        runtime.set_cluster(KubeCluster.from_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig")))
        yield server
        runtime.reset_cluster()
        kube.clear_caches()


def waiting(name: str, deadline) -> PreemptionRequest:
    """A request of team-llm planned in approve mode, waiting for an operator until ``deadline``."""
    request, _ = ledger.open_request(NS, name, mode="approve", trigger="test")
    ledger.begin_planning(request.pk)
    plan = {"feasible": True, "victims": [], "evictions": [], "reason": "fits after preemption"}
    ledger.record_plan(request.pk, plan, cost={}, pods={})
    return approvals.await_approval(request.pk, deadline)


def test_a_local_and_a_kubernetes_user_of_one_name_are_two_people_in_the_ledger_and_the_api(
    client, kube_api, django_user_model
):
    call_command("access", "grant", "oper-b", "--role", "operator", "--namespaces", NS, stdout=io.StringIO())
    local = django_user_model.objects.get(username="oper-b")
    local.set_password("oper-b-pw-12")
    local.save()
    as_local = basic("oper-b", "oper-b-pw-12")
    as_token = token_reader("oper-b", "operator", "--namespaces", NS)
    oper_b, ci = mint_token("oper-b"), mint_token("ci")  # tokens in a service account token's shape
    kube_api.add_token(oper_b, "oper-b")
    kube_api.add_token(ci, "system:serviceaccount:team-llm:ci")
    kube_api.load(
        [
            binding(NS, "gangweb-operator", user("oper-b")),
            binding(NS, "gangweb-operator", {"kind": "ServiceAccount", "name": "ci", "namespace": NS}),
        ]
    )
    as_kube = {"HTTP_AUTHORIZATION": f"Bearer {oper_b}"}
    as_sa = {"HTTP_AUTHORIZATION": f"Bearer {ci}"}
    deadline = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    by = {
        "local": (waiting("rlhf-0042", deadline), as_local),
        "token": (waiting("rlhf-0043", deadline), as_token),
        "k8s-user": (waiting("rlhf-0044", deadline), as_kube),
        "k8s-sa": (waiting("rlhf-0045", deadline), as_sa),
    }
    still = waiting("rlhf-0046", deadline)

    body = client.get(f"/api/v1/requests/{still.pk}/", **as_local).json()
    assert body["state"] == "awaiting_approval" and body["decidedBy"] is None
    assert body["approvalDeadline"].replace("Z", "+00:00") == deadline.isoformat()

    for request, headers in by.values():
        answer = client.post(f"/api/v1/requests/{request.pk}/reject/", **headers)
        assert answer.status_code == 200, answer.content

    expected = {
        "local": {"kind": "local", "name": "oper-b", "display": "local user oper-b"},
        "token": {"kind": "token", "name": "oper-b", "display": "gangweb token of oper-b"},
        "k8s-user": {"kind": "k8s-user", "name": "oper-b", "display": "Kubernetes user oper-b"},
        "k8s-sa": {
            "kind": "k8s-sa",
            "name": "team-llm/ci",
            "display": "Kubernetes service account team-llm/ci",
        },
    }
    for kind, (request, _) in by.items():
        body = client.get(f"/api/v1/requests/{request.pk}/", **as_local).json()
        assert body["state"] == "rejected" and body["decidedBy"] == expected[kind], kind
        assert body["decidedAt"] and body["reason"] == f"rejected by {expected[kind]['display']}"
        entry = LedgerEntry.objects.get(request=request, kind="request.rejected")
        assert entry.data["by"] == {"kind": kind, "name": expected[kind]["name"]}
        listed = client.get(
            "/api/v1/ledger/", {"request": request.pk, "kind": "request.rejected"}, **as_local
        )
        assert listed.json()["results"][0]["message"] == f"rejected by {expected[kind]['display']}"
