"""The ledger's Kubernetes Events (scheduler/preemption/kubeevents.py): written after commit from the one
place ledger events are published, on the preemptor's PodGroup and on each victim pod and its PodGroup,
and counted into series under a burst instead of one object per repeat."""

from __future__ import annotations

from datetime import UTC

import pytest
from django.db import transaction

from scheduler.kube import KubeCluster
from scheduler.preemption import kubeevents, ledger, runtime
from scheduler.preemption.events import publish
from scheduler.preemption.facts import VictimFacts
from scheduler.preemption.ledger.evictions import _eviction_payload as eviction_payload
from scheduler.preemption.models import Eviction, EvictionState, RequestState

pytestmark = pytest.mark.django_db(transaction=True)


def drive_a_plan(
    preemptor: str,
    victims: dict[str, list[str]],
    *,
    uids: dict[str, str] | None = None,
):
    """A request for ``preemptor`` (ns/name) planned to evict ``victims`` (victim PodGroup ns/name -> pod
    names) and executed through the ledger's own functions, as the executor calls them; (request, plan)."""
    namespace, name = preemptor.split("/")
    request, _ = ledger.open_request(namespace, name, mode="enforce", trigger="test")
    ledger.begin_planning(request.pk)
    units = [
        {
            "kind": "PodGroup",
            "namespace": unit.split("/")[0],
            "name": unit.split("/")[1],
            "pods": [f"{unit.split('/')[0]}/{pod}" for pod in pods],
            "priority": 0,
        }
        for unit, pods in victims.items()
    ]
    evictions = [pod for unit in units for pod in unit["pods"]]
    plan = ledger.record_plan(
        request.pk,
        {
            "feasible": True,
            "victims": units,
            "evictions": evictions,
            "reason": f"evict {len(evictions)} pods",
            "outcome": "feasible",
        },
        cost={},
        pods={pod: VictimFacts(uid=(uids or {}).get(pod, ""), node="node-0") for pod in evictions},
    )
    assert ledger.begin_execution(request.pk)
    rows = list(Eviction.objects.filter(plan=plan).values_list("pk", flat=True))
    ledger.record_dry_runs([(pk, 201, "", True) for pk in rows])
    for pk in rows:
        assert ledger.claim_for_eviction(pk)
        ledger.record_eviction(pk, evicted=True, code=201, message="")
    ledger.finish(request.pk, RequestState.SUCCEEDED, "every victim evicted")
    return request, plan


def events_of(cluster: KubeCluster) -> list[dict]:
    """Every Event, as ``events.k8s.io/v1`` serves it."""
    return cluster.list_events()


def regarding(event: dict) -> dict:
    return event["regarding"]


@pytest.fixture
def kube(api_server):
    cluster = KubeCluster.from_kubeconfig(api_server.kubeconfig, timeout=(5.0, 30.0))
    runtime.set_cluster(cluster)
    yield cluster
    runtime.reset_cluster()


def test_a_plan_executed_through_the_ledger_tells_each_pod_and_podgroup(api_server, kube):
    victims = {"batch/low-0": ["low-0-0", "low-0-1", "low-0-2"], "batch/low-1": ["low-1-0"]}
    request, plan = drive_a_plan("team-a/train", victims, uids={"batch/low-0-0": "uid-low-0-0"})
    assert kubeevents.flush(60)
    events = events_of(kube)
    on_pods = [e for e in events if regarding(e)["kind"] == "Pod"]
    on_groups = [e for e in events if regarding(e)["kind"] == "PodGroup"]
    # One per evicted pod (its own `kubectl describe pod`), none for the dry runs.
    assert sorted(f"{e['metadata']['namespace']}/{regarding(e)['name']}" for e in on_pods) == sorted(
        plan.evictions
    )
    assert all(e["reason"] == "Preempted" and e["related"]["name"] == "train" for e in on_pods)
    assert {regarding(e)["name"]: regarding(e).get("uid") for e in on_pods}["low-0-0"] == "uid-low-0-0"
    # Each victim PodGroup: one object, its series counting its pods past the first.
    preempted = {regarding(e)["name"]: e for e in on_groups if e["reason"] == "Preempted"}
    assert {name: (e.get("series") or {}).get("count", 1) for name, e in preempted.items()} == {
        "low-0": 3,
        "low-1": 1,
    }
    ids = f"request {request.pk}, plan {plan.pk}"
    assert all(ids in e["note"] and "team-a/train" in e["note"] for e in on_pods + list(preempted.values()))
    preemptor = [(e["reason"], e["type"]) for e in on_groups if regarding(e)["name"] == "train"]
    assert sorted(preemptor) == [("PreemptionExecuted", "Normal"), ("PreemptionPlanned", "Normal")]
    assert {e["reportingController"] for e in events} == {"gangweb.io/preemption"}


def test_a_burst_of_1000_evictions_makes_one_counted_event_per_podgroup(api_server, kube):
    """1,000 eviction ledger events (dry run and result of 500 pods of 4 PodGroups), published in one
    transaction from the one place the ledger publishes: 500 pod Events, 4 PodGroup Events whose series
    count their pods, and no object per dry run or per repeat."""
    _, plan = drive_a_plan("team-a/train", {})
    rows = Eviction.objects.bulk_create(
        Eviction(
            plan=plan,
            namespace="batch",
            name=f"low-{unit}-{i}",
            node="node-0",
            victim_unit=f"PodGroup batch/low-{unit}",
        )
        for unit in range(4)
        for i in range(125)
    )
    with transaction.atomic():
        for state in (EvictionState.DRY_RUN_OK, EvictionState.EVICTED):
            for row in rows:
                row.state = state
                publish("eviction", eviction_payload(row))
    assert kubeevents.flush(120)
    events = events_of(kube)
    on_pods = [e for e in events if regarding(e)["kind"] == "Pod"]
    assert len(on_pods) == 500 == len({regarding(e)["name"] for e in on_pods})
    preempted = [e for e in events if regarding(e)["kind"] == "PodGroup" and e["reason"] == "Preempted"]
    assert sorted((regarding(e)["name"], e["series"]["count"]) for e in preempted) == [
        (f"low-{u}", 125) for u in range(4)
    ]
    assert all(e["series"]["lastObservedTime"] for e in preempted)
    assert len(events) == 500 + 4 + 2  # and the preemptor's planned, executed


def test_an_infeasible_plan_is_a_warning_with_its_reason_code(api_server, kube):
    request, _ = ledger.open_request("team-a", "huge", mode="enforce", trigger="test")
    ledger.begin_planning(request.pk)
    plan = ledger.record_plan(
        request.pk,
        {"feasible": False, "reason": "no domain has 64 GPUs", "outcome": "infeasible:capacity"},
        cost={},
        pods={},
    )
    assert kubeevents.flush(30)
    [event] = events_of(kube)
    assert (event["reason"], event["type"], regarding(event)["name"]) == (
        "PreemptionInfeasible",
        "Warning",
        "huge",
    )
    assert "infeasible:capacity" in event["note"] and f"plan {plan.pk}" in event["note"]


def test_nothing_is_written_for_a_ledger_write_that_rolls_back(api_server, kube):
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="test")
    ledger.begin_planning(request.pk)
    with pytest.raises(RuntimeError), transaction.atomic():
        ledger.record_plan(
            request.pk, {"feasible": False, "reason": "x", "outcome": "infeasible:capacity"}, cost={}, pods={}
        )
        raise RuntimeError("the transaction rolls back")
    ledger.record_plan(
        request.pk, {"feasible": False, "reason": "y", "outcome": "infeasible:quota"}, cost={}, pods={}
    )
    assert kubeevents.flush(30)
    [event] = events_of(kube)
    assert "infeasible:quota" in event["note"]


def test_a_notice_given_then_withdrawn_is_told_to_the_preemptor_and_each_victim_unit(api_server, kube):
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="test")
    ledger.begin_planning(request.pk)
    victims = [
        {"kind": "PodGroup", "namespace": "batch", "name": "low-0", "pods": ["batch/low-0-0"]},
        {"kind": "Pod", "namespace": "batch", "name": "solo", "pods": ["batch/solo"]},
    ]
    plan = ledger.record_plan(
        request.pk,
        {
            "feasible": True,
            "victims": victims,
            "evictions": ["batch/low-0-0", "batch/solo"],
            "outcome": "preempt",
        },
        cost={},
        pods={},
    )
    plan, given = ledger.give_notice(plan.pk, 300)
    assert given and ledger.give_notice(plan.pk, 300) == (plan, False)  # never a second notice
    ledger.withdraw_notice(plan.pk, "the gang fits without evicting")
    assert kubeevents.flush(60)
    told = sorted(
        (regarding(e)["kind"], regarding(e)["name"], e["reason"], e["type"])
        for e in events_of(kube)
        if "Notice" in e["reason"]
    )
    assert told == [
        ("Pod", "solo", "PreemptionNotice", "Warning"),
        ("Pod", "solo", "PreemptionNoticeWithdrawn", "Normal"),
        ("PodGroup", "low-0", "PreemptionNotice", "Warning"),
        ("PodGroup", "low-0", "PreemptionNoticeWithdrawn", "Normal"),
        ("PodGroup", "train", "PreemptionNotice", "Normal"),
        ("PodGroup", "train", "PreemptionNoticeWithdrawn", "Normal"),
    ]
    # The deadline as every message says a time, to the second in UTC (kubectl and the pages' feed read it).
    deadline = f"{plan.notice_deadline.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    notices = [e["note"] for e in events_of(kube) if e["reason"] == "PreemptionNotice"]
    assert notices and all(deadline in note and "+00:00" not in note for note in notices), notices
