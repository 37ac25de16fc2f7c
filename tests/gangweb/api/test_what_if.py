"""POST /api/plan/: the engine's answer for a gang on the live cluster, and nothing executed."""

from __future__ import annotations

import pytest

from scheduler.engine import parse_snapshot, plan
from scheduler.preemption import runtime
from scheduler.preemption.models import LedgerEntry, PreemptionRequest
from scheduler.simulation import SimulatedCluster
from tests.scheduler.preemption.builders import T1, pod, podgroup

pytestmark = pytest.mark.django_db

GANG_PLAN_KEYS = [
    "podGroup",
    "policy",
    "feasible",
    "victims",
    "evictions",
    "placement",
    "domain",
    "reason",
    "outcome",
    "optimality",
]
GPU = "nvidia.com/gpu"


@pytest.fixture
def simulation():
    cluster = SimulatedCluster(nodes=16, seed=7)
    runtime.set_cluster(cluster)
    yield cluster
    runtime.reset_cluster()


@pytest.fixture
def api(client, reader, settings):
    settings.DEMO = False
    client.force_login(reader)

    def ask(body, **extra):
        return client.post("/api/plan/", body, content_type="application/json", **extra)

    return ask


def waiting_gangs(cluster: SimulatedCluster) -> list[str]:
    from gangweb.clusterview.picture import build_picture

    picture = build_picture(cluster.snapshot_objects(), now=cluster.now, cluster="simulated")
    return [g["key"] for g in picture["gangs"] if g["state"] == "waiting"]


def pod_gpus(cluster: SimulatedCluster) -> dict[str, int]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": sum(
            int(c["resources"]["requests"].get(GPU, 0)) for c in o["spec"]["containers"]
        )
        for o in cluster.snapshot_objects()
        if o["kind"] == "Pod"
    }


@pytest.mark.parametrize("policy", ["gangweb", "kep5710"])
def test_answers_the_engines_plan_for_each_waiting_gang_and_executes_nothing(
    api, simulation, published, policy
):
    before = simulation.snapshot_objects()
    expected_snapshot = parse_snapshot(before)
    gangs = waiting_gangs(simulation)
    assert gangs, "the simulation starts with gangs waiting"
    feasible = 0
    for gang in gangs:
        response = api({"podGroup": gang, "policy": policy})
        assert response.status_code == 200, response.content
        body = response.json()
        assert {key: body[key] for key in GANG_PLAN_KEYS} == plan(expected_snapshot, gang, policy).to_dict()
        gpus = pod_gpus(simulation)
        assert body["cost"]["evictedPods"] == len(body["evictions"])
        assert body["cost"]["evictedGpus"] == sum(gpus[pod] for pod in body["evictions"])
        assert body["cost"]["victimUnits"] == len(body["victims"])
        feasible += bool(body["feasible"] and body["evictions"])
    assert feasible, "at least one waiting gang can be placed by preemption"
    # A question, not an action: the cluster, the ledger and the live stream are untouched.
    assert simulation.snapshot_objects() == before
    assert not PreemptionRequest.objects.exists() and not LedgerEntry.objects.exists()
    assert published == []


@pytest.mark.django_db(transaction=True)
def test_room_just_freed_for_another_gang_stays_taken_as_the_pipeline_sees_it(api, make_request):
    # A second 2 x 8-GPU gang waits beside team-a/train in the same cluster.
    other = [podgroup("team-z", "other", min_count=2, priority=100, unschedulable=True)]
    other += [pod("team-z", f"other-{i}", group="other", priority=100, created=T1) for i in range(2)]
    done = make_request("team-a", extra_objects=other)
    assert done.request.state == "succeeded", done.request.reason
    freed = {pod.rsplit("/", 1)[1] for pod in done.engine_plan["evictions"]}
    # team-a/train's pods still wait for kube-scheduler; the room evicted for them is theirs.
    body = api({"podGroup": "team-z/other"}).json()
    assert body["feasible"] and body["evictions"], body["reason"]
    assert not freed & {pod.rsplit("/", 1)[1] for pod in body["evictions"]}
    assert set(body["placement"].values()).isdisjoint(done.engine_plan["placement"].values())


def test_the_default_policy_is_gangweb(api, simulation):
    podgroup = waiting_gangs(simulation)[0]
    assert api({"podGroup": podgroup}).json()["policy"] == "gangweb"


@pytest.mark.parametrize(
    "body, field, says",
    [
        ({"podGroup": "team-x/nope"}, "podGroup", "PodGroup team-x/nope not found"),
        ({"podGroup": "nope"}, "podGroup", "'nope' is not NAMESPACE/NAME of a PodGroup"),
        ({"podGroup": "a/b/c"}, "podGroup", "is not NAMESPACE/NAME"),
        ({}, "podGroup", "This field is required."),
        (
            {"podGroup": "team-a/x", "policy": "fastest"},
            "policy",
            "unknown policy 'fastest'; choose one of: gangweb, kep5710, legacy",
        ),
    ],
)
def test_bad_input_is_a_400_that_says_what_is_wrong(api, simulation, body, field, says):
    response = api(body)
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert says in response.json()["errors"][field][0]


def test_a_body_that_is_not_json_is_a_400(api, simulation):
    response = api("{not json")
    assert response.status_code == 400 and "JSON parse error" in response.json()["detail"]


def test_an_unreadable_cluster_is_a_503_that_says_so(api, settings, monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    settings.GANGWEB_CLUSTER = "kube"
    runtime.reset_cluster()
    try:
        response = api({"podGroup": "team-a/train"})
    finally:
        runtime.reset_cluster()
    assert response.status_code == 503
    assert response.json()["detail"].startswith("cannot read the cluster:")


def test_anonymous_callers_are_refused(client, settings, simulation):
    settings.DEMO = False
    response = client.post(
        "/api/plan/", {"podGroup": waiting_gangs(simulation)[0]}, content_type="application/json"
    )
    assert response.status_code == 401 and "Basic" in response["WWW-Authenticate"]
