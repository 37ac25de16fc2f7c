"""A namespace leaves approve mode across a restart: a real Celery worker in approve mode leaves a plan
waiting; its successor, started in enforce (or observe) mode, settles it at once, against the Kubernetes
API test server (its own process), over PostgreSQL and Redis, with the approval timeout an hour away."""

from __future__ import annotations

import pytest
from celery import Celery

from scheduler.preemption import ledger
from scheduler.preemption.models import PreemptionRequest, RequestState
from tests.scheduler.preemption.builders import small_cluster
from tests.scheduler.preemption.workers import Worker, real_evictions, wait_until, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(300)]

HOUR = "3600"


def waiting_plan(api_server, broker, tmp_path) -> tuple[PreemptionRequest, list[str]]:
    """team-a/train planned by a worker in approve mode, waiting; the worker stopped."""
    log_path = tmp_path / "approve-worker.log"
    worker = Worker(
        worker_env(api_server, broker, GANGWEB_MODE="approve", GANGWEB_APPROVAL_TIMEOUT_SECONDS=HOUR),
        log_path,
    ).start()
    sender = Celery("mode-change-test", broker=broker, set_as_current=False)
    try:
        request, _ = ledger.open_request("team-a", "train", mode="approve", trigger="mode change test")
        sender.send_task("scheduler.plan_request", args=[request.pk])
        wait_until(
            lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.AWAITING_APPROVAL,
            120,
            "the approve-mode worker to plan and wait for an operator",
            log_path,
        )
    finally:
        worker.stop()
        sender.close()
    victims = sorted(request.plans.get().evictions)
    assert victims and not any(real_evictions(api_server, pod) for pod in victims)
    return request, victims


def successor(request: PreemptionRequest) -> PreemptionRequest | None:
    return PreemptionRequest.objects.filter(namespace="team-a", name="train", pk__gt=request.pk).first()


def restarted(api_server, broker, tmp_path, mode: str, request: PreemptionRequest, done: str):
    log_path = tmp_path / f"{mode}-worker.log"
    worker = Worker(
        worker_env(api_server, broker, GANGWEB_MODE=mode, GANGWEB_APPROVAL_TIMEOUT_SECONDS=HOUR), log_path
    ).start()
    try:
        return wait_until(
            lambda: (again := successor(request)) is not None and again.state == done and again,
            120,
            f"the {mode}-mode worker to settle the waiting request and re-plan the gang",
            log_path,
        )
    finally:
        worker.stop()


def test_restarting_in_enforce_mode_evicts_for_a_plan_left_waiting_for_approval(api_server, broker, tmp_path):
    api_server.control.load(small_cluster())
    request, _ = waiting_plan(api_server, broker, tmp_path)

    again = restarted(api_server, broker, tmp_path, "enforce", request, RequestState.SUCCEEDED)

    request.refresh_from_db()
    assert request.state == RequestState.SUPERSEDED and str(request.decider) == "gangweb:gangweb"
    assert "now in enforce mode" in request.reason
    assert request.history.filter(kind="request.mode_changed").exists()
    assert again.mode == "enforce"
    for pod in again.plans.get().evictions:
        assert [code for code in real_evictions(api_server, pod) if code < 300] == [201], pod


def test_restarting_in_observe_mode_closes_a_plan_left_waiting_and_evicts_nothing(
    api_server, broker, tmp_path
):
    api_server.control.load(small_cluster())
    request, victims = waiting_plan(api_server, broker, tmp_path)

    again = restarted(api_server, broker, tmp_path, "observe", request, RequestState.OBSERVED)

    request.refresh_from_db()
    assert request.state == RequestState.SUPERSEDED and "now in observe mode" in request.reason
    assert again.mode == "observe"
    assert not any(real_evictions(api_server, pod) for pod in victims)
