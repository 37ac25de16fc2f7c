"""The ledger's state machine on the real database (PostgreSQL under `make test`)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from scheduler.preemption import ledger
from scheduler.preemption.facts import VictimFacts
from scheduler.preemption.models import Eviction, EvictionState, LedgerEntry, PreemptionRequest, RequestState

pytestmark = pytest.mark.django_db

PLAN = {
    "podGroup": "team-a/train",
    "policy": "gangweb",
    "feasible": True,
    "victims": [
        {
            "kind": "PodGroup",
            "namespace": "batch",
            "name": "low",
            "priority": 10,
            "pods": ["batch/low-0", "batch/low-1"],
        }
    ],
    "evictions": ["batch/low-0", "batch/low-1"],
    "placement": {"team-a/train-0": "node-0", "team-a/train-1": "node-1"},
    "domain": None,
    "reason": "evict the cheapest gang",
}
PODS = {"batch/low-0": VictimFacts("uid-0", "node-0", 8), "batch/low-1": VictimFacts("uid-1", "node-1", 8)}


def plan_request():
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="test")
    ledger.begin_planning(request.pk)
    return ledger.record_plan(request.pk, PLAN, cost={"victim_units": 1}, pods=PODS)


def test_open_request_is_idempotent_per_gang():
    first, created = ledger.open_request("team-a", "train", mode="enforce", trigger="pending")
    again, created_again = ledger.open_request("team-a", "train", mode="enforce", trigger="pending")
    assert (created, created_again) == (True, False)
    assert again.pk == first.pk
    assert PreemptionRequest.objects.filter(namespace="team-a", name="train").count() == 1


def test_database_refuses_a_second_active_request_for_a_gang():
    ledger.open_request("team-a", "train", mode="enforce")
    with pytest.raises(IntegrityError), transaction.atomic():
        PreemptionRequest.objects.create(namespace="team-a", name="train", state=RequestState.PLANNING)


def test_a_finished_request_makes_room_for_a_new_one():
    first, _ = ledger.open_request("team-a", "train", mode="enforce")
    ledger.finish(first.pk, RequestState.FAILED, "gave up")
    second, created = ledger.open_request("team-a", "train", mode="enforce")
    assert created and second.pk != first.pk


def test_plan_records_one_eviction_row_per_victim_pod_and_moves_to_planned():
    plan = plan_request()
    plan.request.refresh_from_db()
    assert plan.request.state == RequestState.PLANNED
    rows = {e.pod: (e.state, e.node, e.gpus, e.victim_unit) for e in plan.pod_evictions.all()}
    assert rows == {
        "batch/low-0": (EvictionState.PLANNED, "node-0", 8, "PodGroup batch/low"),
        "batch/low-1": (EvictionState.PLANNED, "node-1", 8, "PodGroup batch/low"),
    }
    assert plan.evicted_gpus == 16 and plan.as_gang_plan() == PLAN


def test_infeasible_plan_finishes_the_request():
    request, _ = ledger.open_request("team-a", "train", mode="enforce")
    ledger.begin_planning(request.pk)
    ledger.record_plan(
        request.pk,
        {**PLAN, "feasible": False, "victims": [], "evictions": [], "reason": "no rack has 16 free GPUs"},
        cost={},
        pods={},
    )
    request.refresh_from_db()
    assert request.state == RequestState.INFEASIBLE and request.finished_at is not None
    assert request.reason == "no rack has 16 free GPUs"


def test_illegal_transitions_are_refused():
    plan = plan_request()
    with pytest.raises(ValidationError):
        ledger.finish(plan.request.pk, RequestState.PENDING, "back to the start")
    row = plan.pod_evictions.first()
    assert ledger.claim_for_eviction(row.pk) is None  # never dry-run: must not reach the API
    row.refresh_from_db()
    assert row.state == EvictionState.PLANNED and row.attempts == 0


def test_terminal_states_stay_terminal():
    plan = plan_request()
    ledger.finish(plan.request.pk, RequestState.FAILED, "first")
    ledger.finish(plan.request.pk, RequestState.SUCCEEDED, "second")
    plan.request.refresh_from_db()
    assert (plan.request.state, plan.request.reason) == (RequestState.FAILED, "first")


def test_claim_is_committed_with_an_attempt_before_the_call():
    plan = plan_request()
    row = plan.pod_evictions.first()
    ledger.record_dry_run(row.pk, 201, "", ok=True)
    claimed = ledger.claim_for_eviction(row.pk)
    stored = Eviction.objects.get(pk=row.pk)
    assert (claimed.state, stored.state, stored.attempts) == (
        EvictionState.EVICTING,
        EvictionState.EVICTING,
        1,
    )
    ledger.record_eviction(row.pk, evicted=True, code=201, message="")
    assert ledger.claim_for_eviction(row.pk) is None  # evicted rows are never sent again


def test_a_plans_dry_runs_are_recorded_together_and_rows_past_them_stay():
    plan = plan_request()
    first, second = plan.pod_evictions.order_by("pk")
    ledger.record_dry_run(first.pk, 201, "", ok=True)
    ledger.claim_for_eviction(first.pk)  # past its dry run: a late answer must not move it back
    rows = ledger.record_dry_runs([(first.pk, 429, "budget", False), (second.pk, 429, "budget", False)])
    assert [r.pk for r in rows] == [first.pk, second.pk]
    states = dict(Eviction.objects.filter(plan=plan).values_list("pk", "state"))
    assert states == {first.pk: EvictionState.EVICTING, second.pk: EvictionState.DRY_RUN_REFUSED}
    notes = LedgerEntry.objects.filter(plan=plan, kind="eviction.dry_run").values_list("message", flat=True)
    assert sorted(notes) == [
        "dry run batch/low-0: would be evicted",
        "dry run batch/low-1: refused (429): budget",
    ]


def test_history_is_append_only_and_tells_the_story():
    plan = plan_request()
    entry = LedgerEntry.objects.filter(request=plan.request).first()
    entry.message = "rewritten"
    with pytest.raises(ValidationError):
        entry.save()
    with pytest.raises(ValidationError):
        entry.delete()
    kinds = list(
        LedgerEntry.objects.filter(request=plan.request).order_by("id").values_list("kind", flat=True)
    )
    assert kinds == ["request.opened", "request.planning", "plan.created"]


def test_events_are_published_only_after_commit(published, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        plan_request()
    assert [event for event, _ in published] == ["request.opened", "plan.created"]
    assert published[1][1]["evictions"] == PLAN["evictions"]

    published.clear()
    try:
        with transaction.atomic():
            ledger.finish(PreemptionRequest.objects.get().pk, RequestState.FAILED, "boom")
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    assert published == []
    assert PreemptionRequest.objects.get().state == RequestState.PLANNED


def test_admin_shows_the_ledger_read_only(admin_client):
    plan = plan_request()
    for path in (
        "/admin/scheduler/preemptionrequest/",
        f"/admin/scheduler/preemptionrequest/{plan.request.pk}/change/",
        "/admin/scheduler/plan/",
        f"/admin/scheduler/plan/{plan.pk}/change/",
        "/admin/scheduler/eviction/",
        "/admin/scheduler/ledgerentry/",
    ):
        response = admin_client.get(path)
        assert response.status_code == 200, path
    assert b"low-0" in admin_client.get("/admin/scheduler/eviction/").content
    assert admin_client.get("/admin/scheduler/ledgerentry/add/").status_code == 403


def test_an_unplaceable_gang_is_looked_at_less_and_less_often():
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()

    def finished(state, seconds_ago):
        PreemptionRequest.objects.create(
            namespace="team-a", name="train", state=state, finished_at=now - timedelta(seconds=seconds_ago)
        )

    def cooling_down():
        return ledger.cooling_down("team-a", "train", pause_seconds=60)

    assert not cooling_down()
    finished(RequestState.INFEASIBLE, 90)
    assert not cooling_down()  # one miss: 60 s pause, over
    finished(RequestState.INFEASIBLE, 90)
    assert cooling_down()  # two in a row: 120 s
    finished(RequestState.FAILED, 200)
    assert cooling_down()  # three: 240 s
    finished(RequestState.SUCCEEDED, 70)
    assert not cooling_down()  # success resets to 60 s
    finished(RequestState.SUPERSEDED, 0)
    assert not cooling_down()  # a superseded request is re-planned at once, it does not count


def test_a_created_podgroup_is_one_entry_and_one_event(published, django_capture_on_commit_callbacks):
    data = {"podGroup": "team-a/train", "pods": ["team-a/train-0"], "spec": {}, "annotations": {}}
    with django_capture_on_commit_callbacks(execute=True):
        entry = ledger.record_podgroup_created("team-a", "train", "created PodGroup team-a/train", data)
    assert (entry.kind, entry.request, entry.namespace, entry.name, entry.data) == (
        "podgroup.created",
        None,
        "team-a",
        "train",
        data,
    )
    assert published == [("podgroup.created", data)]


def test_a_request_that_succeeds_while_detection_reads_opens_no_second_one(monkeypatch):
    """Detection read the pause, then the active request: a request that succeeded between the two reads
    was seen by neither, and a second plan was opened at once for the gang the first had just placed."""
    from scheduler.preemption.ledger import requests

    first = plan_request().request
    ledger.begin_execution(first.pk)
    assert ledger.open_new_request("team-a", "train", pause_seconds=60, mode="enforce") is None

    real = requests.cooling_down

    def succeeds_during_the_read(namespace, name, *, pause_seconds):
        answer = real(namespace, name, pause_seconds=pause_seconds)  # read before the success commits
        if PreemptionRequest.objects.filter(pk=first.pk, finished_at__isnull=True).exists():
            ledger.finish(first.pk, RequestState.SUCCEEDED, "the gang fits now")
        return answer

    monkeypatch.setattr(requests, "cooling_down", succeeds_during_the_read)
    # whichever read the success falls between, one of them sees it: no second request
    assert ledger.open_new_request("team-a", "train", pause_seconds=60, mode="enforce") is None
    ledger.finish(first.pk, RequestState.SUCCEEDED, "the gang fits now")
    assert ledger.open_new_request("team-a", "train", pause_seconds=60, mode="enforce") is None  # pausing
    assert PreemptionRequest.objects.filter(namespace="team-a", name="train").count() == 1
    opened = ledger.open_new_request("team-a", "train", pause_seconds=0, mode="enforce", trigger="again")
    assert opened is not None and opened.pk != first.pk
