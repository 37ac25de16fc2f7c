"""The pipeline decides the order it serves waiting gangs in, and what a plan leads to in each mode."""

from __future__ import annotations

import time

import pytest

from scheduler.preemption import ledger
from scheduler.preemption.dispatch import Next, next_step
from scheduler.preemption.models import PreemptionRequest, RequestState
from scheduler.preemption.serving import LATER, NEVER, NEXT, PLANNING, Waiting, serving_order

pytestmark = pytest.mark.django_db


def test_open_requests_first_then_the_next_pass_then_by_when_each_may_be_served(settings):
    settings.GANGWEB_PENDING_GRACE_SECONDS = 30
    settings.GANGWEB_REQUEST_COOLDOWN_SECONDS = 600
    now = time.time()
    planning, _ = ledger.open_request("a", "planning", mode="enforce")
    paused, _ = ledger.open_request("a", "paused", mode="enforce")
    ledger.begin_planning(paused.pk)
    ledger.finish(paused.pk, RequestState.INFEASIBLE, "no room")  # its next request waits 600 s
    waiting = [
        Waiting("a/young", since=now - 10, never=False),  # in its grace period: 20 s to go
        Waiting("a/never", since=now - 900, never=True),
        Waiting("a/paused", since=now - 900, never=False),
        Waiting("a/stuck", since=now - 900, never=False),
        Waiting("a/planning", since=now - 900, never=False),
    ]
    places = serving_order(waiting, ["a/paused", "a/planning", "a/stuck"], now=now)
    assert [(p.key, p.stage, p.position) for p in places] == [
        ("a/planning", PLANNING, 1),
        ("a/stuck", NEXT, 2),
        ("a/young", LATER, 3),
        ("a/paused", LATER, 4),
        ("a/never", NEVER, None),
    ]
    by_key = {p.key: p for p in places}
    assert by_key["a/planning"].request == planning.pk and by_key["a/paused"].request == paused.pk
    assert by_key["a/stuck"].request is None and by_key["a/stuck"].served_at is None
    assert by_key["a/young"].served_at == pytest.approx(now + 20)
    finished = PreemptionRequest.objects.get(pk=paused.pk).finished_at.timestamp()
    assert by_key["a/paused"].served_at == pytest.approx(finished + 600)


@pytest.mark.parametrize(
    "mode, violations, policy, step",
    [
        ("observe", 2, "respect", Next.OBSERVED),
        ("enforce", 2, "respect", Next.INFEASIBLE),
        ("approve", 2, "respect", Next.INFEASIBLE),
        ("approve", 0, "respect", Next.APPROVAL),
        ("approve", 2, "delete", Next.APPROVAL),
        ("enforce", 0, "respect", Next.EXECUTE),
    ],
)
def test_a_plan_leads_to_its_modes_step(settings, mode, violations, policy, step):
    settings.GANGWEB_PDB_POLICY = policy
    request = PreemptionRequest(namespace="a", name="g", mode=mode, state=RequestState.PLANNED)
    assert next_step(request, violations) == step


def test_a_request_no_longer_planned_leads_nowhere():
    request = PreemptionRequest(namespace="a", name="g", mode="enforce", state=RequestState.CANCELLED)
    assert next_step(request, 0) == Next.NOTHING
