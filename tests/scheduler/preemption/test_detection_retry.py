"""A detection pass the watch trigger enqueued, or a planning task, meets a PostgreSQL outage in a real
worker: it is retried with backoff and goes on once the database answers, instead of waiting for the beat.

The worker reaches the test database through a ``Gate`` of the test's own, closed for a moment; the
shared PostgreSQL is never stopped."""

from __future__ import annotations

import re

import pytest
from celery import Celery
from django.db import connection

from scheduler.preemption import ledger
from scheduler.preemption.models import PreemptionRequest, RequestState
from tests.scheduler.preemption.builders import small_cluster
from tests.scheduler.preemption.workers import Gate, Worker, postgres_url_for_test_db, wait_until, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.fixture
def gated(api_server, broker, tmp_path):
    """A real worker on the small cluster reaching PostgreSQL through a ``Gate``, once its start-up sweep has
    run on the database (it must not be what meets the outage): (gate, sender, worker log)."""
    api_server.control.load(small_cluster())
    postgres_url_for_test_db()  # skips without PostgreSQL
    db = connection.settings_dict
    gate = Gate(db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432))
    through_gate = f"postgres://{db['USER']}@127.0.0.1:{gate.port}/{db['NAME']}"
    log_path = tmp_path / "worker.log"
    worker = Worker(worker_env(api_server, broker, DATABASE_URL=through_gate), log_path).start()
    sender = Celery("retry-test", broker=broker, set_as_current=False)
    try:
        wait_until(
            lambda: re.search(r"recover_requests\[.*\] succeeded", log_path.read_text()),
            90,
            "the worker's start-up sweep",
            log_path,
        )
        yield gate, sender, log_path
    finally:
        worker.stop()
        sender.close()
        gate.stop()


def test_a_triggered_detection_that_met_a_database_outage_is_retried(gated):
    gate, sender, log_path = gated
    gate.close()
    # What the watch trigger sends when team-a/train turns Unschedulable: once per transition.
    sender.send_task("scheduler.detect_unschedulable_gangs", kwargs={"podgroup": "team-a/train"})
    met = re.compile(r"detect_unschedulable_gangs\[.*\] (retry|raised).*OperationalError")
    wait_until(lambda: met.search(log_path.read_text()), 90, "detection to meet the outage", log_path)
    assert not PreemptionRequest.objects.exists()
    gate.reopen()
    request = wait_until(
        lambda: PreemptionRequest.objects.filter(namespace="team-a", name="train").first(),
        90,
        "the retried detection to open the request",
        log_path,
    )
    assert "detection of team-a/train failed, retrying in 1 s" in log_path.read_text()
    assert PreemptionRequest.objects.count() == 1 and request.trigger


def test_a_plan_that_met_a_database_outage_before_it_started_is_retried(gated):
    """A worker without a beat (the benchmarks' own) has no recovery sweep to fall back on: the planning task
    itself waits for the database instead of leaving the request pending for ever."""
    gate, sender, log_path = gated
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="test")
    gate.close()
    sender.send_task("scheduler.plan_request", args=[request.pk])
    met = re.compile(r"cannot start planning, retrying in 1 s")
    wait_until(lambda: met.search(log_path.read_text()), 90, "planning to meet the outage", log_path)
    assert PreemptionRequest.objects.get(pk=request.pk).state == RequestState.PENDING
    gate.reopen()
    wait_until(
        lambda: (
            PreemptionRequest.objects.get(pk=request.pk).state
            not in (RequestState.PENDING, RequestState.PLANNING)
        ),
        90,
        "the retried task to plan the request",
        log_path,
    )
    assert request.plans.exists(), PreemptionRequest.objects.get(pk=request.pk).reason
