"""A real Celery worker killed in the middle of a reap (SIGKILL), then restarted: the broken gang's
remnants end evicted, each member once, never half-evicted.

Real parts as in test_crash.py: the Kubernetes API test server in its own process, a `celery -A gangweb
worker`, Redis and the PostgreSQL test database. The reap is opened by the reaper in this process (its
hand-over to the broker caught), then sent to the worker; the test server holds each real eviction two
seconds and answers the second member's first one with 503; the worker is killed while both are in flight.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from datetime import timedelta

import pytest
from celery import Celery
from django.utils import timezone

from scheduler.kube import KubeCluster
from scheduler.preemption import healthwatch, planning, reaper, tasks
from scheduler.preemption.models import BrokenGang, Eviction, EvictionState, PreemptionRequest, RequestState
from tests.scheduler.preemption.builders import node, pod, podgroup
from tests.scheduler.preemption.workers import Worker, postgres_url_for_test_db, real_evictions, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

EVICTION_DELAY = 2.0
LOCK_TTL = 10
REQUEST_TIMEOUT = 3


def broken_gang() -> list[dict]:
    """team-a/train (minCount 3) has lost a member: two pods on node-0 and node-1 hold 16 GPUs."""
    objects = [node(f"node-{i}") for i in range(3)]
    objects += [podgroup("team-a", "train", min_count=3, priority=100)]
    objects += [
        pod("team-a", f"train-{i}", group="train", priority=100, node_name=f"node-{i}") for i in range(2)
    ]
    return objects


def test_a_worker_killed_mid_reap_is_finished_by_its_successor(
    api_server, broker, tmp_path, settings, monkeypatch
):
    control = api_server.control
    control.load(broken_gang())
    cluster = KubeCluster.from_kubeconfig(api_server.kubeconfig)
    settings.GANGWEB_NAMESPACE_REAPERS = {"team-a": "evict"}
    settings.GANGWEB_REAP_GRACE_SECONDS = 60
    settings.CELERY_TASK_ALWAYS_EAGER = False
    handed: list = []
    monkeypatch.setattr(tasks.execute_plan, "apply_async", lambda **kw: handed.append(kw))

    objects = planning.fresh_objects(cluster)
    assert healthwatch.sweep(objects)["broken"] == ["team-a/train"]
    BrokenGang.objects.update(since=timezone.now() - timedelta(seconds=61))
    [request_id] = reaper.sweep(objects)
    assert [kw["args"] for kw in handed] == [(request_id,)]  # handed on as a preemption's plan is
    request = PreemptionRequest.objects.get(pk=request_id)
    assert request.state == RequestState.PLANNED
    landing, failing = members = ["team-a/train-0", "team-a/train-1"]

    for member in members:
        name = member.split("/")[1]
        control.add_fault(f"/pods/{re.escape(name)}/eviction$", code=0, method="POST", times=1)  # dry run
    control.add_fault("/pods/train-0/eviction$", code=0, method="POST", times=1, delay=EVICTION_DELAY)
    control.add_fault(
        "/pods/train-1/eviction$",
        code=503,
        method="POST",
        times=1,
        delay=EVICTION_DELAY,
        message="etcd leader changed",
    )
    env = {
        **os.environ,
        "DATABASE_URL": postgres_url_for_test_db(),
        "REDIS_URL": broker,
        "KUBECONFIG": str(api_server.kubeconfig),
        "GANGWEB_CLUSTER": "kube",
        "GANGWEB_LOCK_TTL_SECONDS": str(LOCK_TTL),
        "GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS": str(REQUEST_TIMEOUT),
        "GANGWEB_NAMESPACE_REAPERS": "team-a=evict",
        "SECRET_KEY": "reap-crash-test",
        "GANGWEB_DEMO": "0",
    }
    log_path = tmp_path / "worker.log"
    first = Worker(env, log_path).start()
    sender = Celery("reap-crash-test", broker=broker, set_as_current=False)
    try:
        sender.send_task("scheduler.execute_plan", args=[request_id])
        wait_until(
            lambda: all(
                r.state == EvictionState.EVICTING
                for r in Eviction.objects.filter(plan__request_id=request_id)
            ),
            60,
            "both real evictions to be claimed",
            log_path,
        )
        wait_until(
            lambda: all(f["hits"] == 1 for f in control.faults() if f["delay"]),
            30,
            "both real evictions to reach the API server",
            log_path,
        )
        first.kill()
        assert PreemptionRequest.objects.get(pk=request_id).state == RequestState.EXECUTING
        wait_until(
            lambda: real_evictions(api_server, landing) and real_evictions(api_server, failing),
            30,
            "the dead client's requests to be answered",
            log_path,
        )
        second = Worker(env, log_path).start()
        try:
            wait_until(
                lambda: PreemptionRequest.objects.get(pk=request_id).state != RequestState.EXECUTING,
                90,
                "the successor to finish the reap",
                log_path,
            )
        finally:
            second.stop()
    finally:
        first.stop() if first.proc.poll() is None else first.log.close()
        sender.close()

    request.refresh_from_db()
    assert request.state == RequestState.SUCCEEDED, request.reason
    assert {r.pod: r.state for r in Eviction.objects.filter(plan__request=request)} == {
        m: EvictionState.EVICTED for m in members
    }
    assert Counter(code for m in members for code in real_evictions(api_server, m) if code < 300) == {201: 2}
    assert real_evictions(api_server, landing) == [201]  # closed from the pod's state, never sent again
    assert real_evictions(api_server, failing) == [503, 201]  # the unit finished, not left half-evicted
