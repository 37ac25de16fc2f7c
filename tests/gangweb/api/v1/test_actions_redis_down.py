"""An operator's action while Redis (the task broker and the live stream's log) is down: the ledger's
commit is the truth, so the answer says what was done; the hand-over to the worker and the page follow
when Redis is back."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from gangweb import events, stream
from gangweb.celery import app
from scheduler.preemption import ledger, planning, runtime, tasks
from scheduler.preemption.models import PreemptionRequest, RequestState
from tests.scheduler.preemption.builders import FakeCluster, small_cluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture
def redis_of_its_own(own_redis, settings, monkeypatch):
    """The broker and the live stream's log on the test's own Redis, which the test may stop."""
    shared, settings.REDIS_URL = settings.REDIS_URL, own_redis.url
    names = ("broker_url", "broker_write_url", "task_always_eager")
    before = {name: app.conf[name] for name in names}
    app.conf.update(broker_url=own_redis.url, broker_write_url=own_redis.url, task_always_eager=False)
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    yield own_redis
    events.flush(1)
    app.conf.update(before)
    settings.REDIS_URL = shared  # the API's teardown clears its stores there


def awaiting_approval() -> PreemptionRequest:
    cluster = FakeCluster(small_cluster("team-a"))
    runtime.set_cluster(cluster)
    request, _ = ledger.open_request("team-a", "train", mode="approve", trigger="test: pending for 45s")
    ledger.begin_planning(request.pk)
    result = planning.compute(cluster.snapshot_objects(), request.podgroup, request.policy)
    tasks.after_plan(request.pk, result, planned_by="single")
    request.refresh_from_db()
    assert request.state == RequestState.AWAITING_APPROVAL, request.reason
    return request


def test_approving_while_redis_is_down_answers_what_was_done(client, a_operator, redis_of_its_own, caplog):
    request = awaiting_approval()
    assert events.flush(10)
    redis_of_its_own.stop()
    try:
        with caplog.at_level(logging.WARNING):
            answer = client.post(f"/api/v1/requests/{request.pk}/approve/", **a_operator)
        assert answer.status_code == 200, answer.content[:2000]
        assert answer.json()["state"] == "planned"
        assert PreemptionRequest.objects.get(pk=request.pk).state == RequestState.PLANNED
        assert any("scheduler.execute_plan" in r.getMessage() for r in caplog.records), caplog.text
        # Approving again is a conflict that says why: it was approved.
        again = client.post(f"/api/v1/requests/{request.pk}/approve/", **a_operator)
        assert again.status_code == 409 and "planned" in again.json()["detail"]
    finally:
        redis_of_its_own.start()  # back, and empty (no volume)

    # The event the approval published while Redis was down reaches the stream's log once it is back.
    assert events.flush(60), "the approval's event was never sent"
    approved = [m for m in stream.latest("ledger", 50) if m["type"] == "request.approved"]
    assert [m["payload"]["request"] for m in approved] == [request.pk]
    # The worker gets the execution from the recovery sweep, which finds the approved request.
    PreemptionRequest.objects.filter(pk=request.pk).update(updated_at=timezone.now() - timedelta(minutes=1))
    assert request.pk in tasks.recover_requests()["resumed"]
    assert redis.Redis.from_url(redis_of_its_own.url).llen("celery") == 1
