"""approve mode end to end: the plan waits, an operator approves, a real Celery worker executes it
against the Kubernetes API test server (its own process), over PostgreSQL and Redis."""

from __future__ import annotations

import pytest
from celery import Celery
from django.db import transaction

from gangweb.access.scope import OPERATOR, Scope
from scheduler.kube import KubeCluster
from scheduler.preemption import actions, ledger, planning, runtime, tasks
from scheduler.preemption.models import PreemptionRequest, RequestState
from tests.scheduler.preemption.builders import small_cluster
from tests.scheduler.preemption.workers import Worker, real_evictions, wait_until, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]


def test_an_approved_plan_is_executed_by_a_worker_and_nothing_before(
    api_server, broker, tmp_path, monkeypatch
):
    api_server.control.load(small_cluster())
    cluster = KubeCluster.from_kubeconfig(api_server.kubeconfig)
    runtime.set_cluster(cluster)
    sender = Celery("approve-test", broker=broker, set_as_current=False)
    # This process hands the execution to the worker's broker, as the web process would to its own.
    monkeypatch.setattr(
        tasks,
        "after_commit",
        lambda task, *args, **options: transaction.on_commit(
            lambda: sender.send_task(task.name, args=list(args))
        ),
    )
    log_path = tmp_path / "worker.log"
    worker = Worker(worker_env(api_server, broker), log_path).start()
    try:
        request, _ = ledger.open_request("team-a", "train", mode="approve", trigger="approve test")
        ledger.begin_planning(request.pk)
        result = planning.compute(planning.fresh_objects(cluster), request.podgroup, "gangweb")
        tasks.after_plan(request.pk, result, planned_by="single")
        request.refresh_from_db()
        assert request.state == RequestState.AWAITING_APPROVAL
        victims = sorted(request.plans.get().evictions)
        assert victims and not any(real_evictions(api_server, pod) for pod in victims)

        actions.approve(request.pk, by=Scope(user="olga", per_namespace={"team-a": OPERATOR}))
        wait_until(
            lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.SUCCEEDED,
            120,
            "the worker to execute the approved plan",
            log_path,
        )
    finally:
        worker.stop()
        sender.close()
        runtime.reset_cluster()
    for pod in victims:
        assert [code for code in real_evictions(api_server, pod) if code < 300] == [201], pod
    request.refresh_from_db()
    assert str(request.decider) == "local:olga"
    kinds = list(request.history.order_by("id").values_list("kind", flat=True))
    assert kinds.index("request.approved") < kinds.index("execution.evicting")
