"""Kill a real Celery worker (SIGKILL) in the middle of an execution, restart it, check the aftermath.

Real parts only: the Kubernetes API test server in its own process (reached through a kubeconfig by
the official client), a `celery -A gangweb worker` process, Redis (a database number of its own) and
the pytest-django PostgreSQL test database, whose committed rows the worker sees.

The test server makes each victim's real eviction take two seconds, and answers the second victim's
first real eviction with 503 after that delay. The worker is killed while both requests are in flight:
the first eviction still lands, the second does not. The successor must close the first row without a
second eviction and finish the unit by evicting the second pod once more.
"""

from __future__ import annotations

import os
import re
from collections import Counter

import httpx
import pytest
from celery import Celery

from scheduler.kube import KubeCluster
from scheduler.preemption import ledger, planning
from scheduler.preemption.models import Eviction, EvictionState, LedgerEntry, PreemptionRequest, RequestState
from tests.conftest import free_port
from tests.scheduler.preemption.builders import small_cluster
from tests.scheduler.preemption.workers import Worker, postgres_url_for_test_db, real_evictions, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

EVICTION_DELAY = 2.0
# A lock must outlast the longest API call (connect + read timeout, 3 + 3 s here) by half again.
LOCK_TTL = 10
REQUEST_TIMEOUT = 3


def test_worker_killed_mid_execution_is_finished_by_its_successor(api_server, broker, tmp_path):
    control = api_server.control
    control.load(small_cluster())
    cluster = KubeCluster.from_kubeconfig(api_server.kubeconfig)

    # Plan in this process, exactly as the planning task would, and commit it.
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="crash test")
    ledger.begin_planning(request.pk)
    result = planning.compute(planning.fresh_objects(cluster), request.podgroup, "gangweb")
    plan = ledger.record_plan(request.pk, result.plan, cost=result.cost, pods=result.pods)
    victims = sorted(plan.evictions)
    assert len(victims) == 2 and plan.victim_units == 1, "the scenario needs one unit of two pods"
    landing, failing = victims

    for pod in victims:
        namespace, name = pod.split("/")
        path = f"^/api/v1/namespaces/{re.escape(namespace)}/pods/{re.escape(name)}/eviction$"
        control.add_fault(path, code=0, method="POST", times=1)  # the dry run goes through untouched
    control.add_fault(
        f"/pods/{re.escape(landing.split('/')[1])}/eviction$",
        code=0,
        method="POST",
        times=1,
        delay=EVICTION_DELAY,
    )
    control.add_fault(
        f"/pods/{re.escape(failing.split('/')[1])}/eviction$",
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
        "SECRET_KEY": "crash-test",
        "GANGWEB_DEMO": "0",
    }
    metrics_port = free_port()
    (tmp_path / "prometheus").mkdir()
    env.update(
        {
            "GANGWEB_WORKER_METRICS_PORT": str(metrics_port),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prometheus"),
        }
    )
    log_path = tmp_path / "worker.log"
    first = Worker(env, log_path).start()
    sender = Celery("crash-test", broker=broker, set_as_current=False)
    try:
        sender.send_task("scheduler.execute_plan", args=[request.pk])

        def both_in_flight():
            rows = list(Eviction.objects.filter(plan=plan))
            return all(r.state == EvictionState.EVICTING for r in rows) and rows

        wait_until(both_in_flight, 60, "both real evictions to be claimed", log_path)

        def both_at_the_server():  # the delayed rules are taken when a request arrives, before the delay
            return all(f["hits"] == 1 for f in control.faults() if f["delay"])

        wait_until(both_at_the_server, 30, "both real evictions to reach the API server", log_path)
        first.kill()  # while both requests sleep inside the API server

        # What the dead worker left: a request mid-execution, both rows claimed, no answer recorded.
        request.refresh_from_db()
        assert request.state == RequestState.EXECUTING
        assert {(r.state, r.attempts) for r in Eviction.objects.filter(plan=plan)} == {
            (EvictionState.EVICTING, 1)
        }
        # The API server finishes the requests of the dead client (logged once answered).
        wait_until(
            lambda: real_evictions(api_server, landing) and real_evictions(api_server, failing),
            30,
            "the dead client's requests to be answered",
            log_path,
        )
        assert real_evictions(api_server, landing) == [201] and real_evictions(api_server, failing) == [503]

        second = Worker(env, log_path).start()
        try:
            wait_until(
                lambda: PreemptionRequest.objects.get(pk=request.pk).state != RequestState.EXECUTING,
                90,
                "the successor to finish the request",
                log_path,
            )
            scraped = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
        finally:
            second.stop()
    finally:
        first.stop() if first.proc.poll() is None else first.log.close()
        sender.close()

    request.refresh_from_db()
    assert request.state == RequestState.SUCCEEDED, request.reason
    rows = {r.pod: r for r in Eviction.objects.filter(plan=plan)}
    assert {pod: r.state for pod, r in rows.items()} == {pod: EvictionState.EVICTED for pod in victims}
    # No pod was evicted twice by this plan: one successful eviction each, at the API server.
    assert Counter(code for pod in victims for code in real_evictions(api_server, pod) if code < 300) == {
        201: 2
    }
    assert real_evictions(api_server, landing) == [201]  # closed from the pod's state, never re-sent
    assert real_evictions(api_server, failing) == [503, 201]  # the unit was finished, not left half-evicted
    assert (rows[landing].attempts, rows[failing].attempts) == (1, 2)
    results = LedgerEntry.objects.filter(plan=plan, kind="eviction.result").values_list(
        "data__pod", "message"
    )
    assert any(pod == landing and "re-checked" in message for pod, message in results)
    # Metrics survive the crash in the multiprocess directory, and count every eviction once.
    assert 'gangweb_podgroup_preemption_attempts_total{result="succeeded"} 1.0' in scraped
    assert "gangweb_podgroup_preemption_evicted_gpus_total 16.0" in scraped
    remaining = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for o in control.dump()
        if o.get("kind") == "Pod"
    }
    for pod in victims:  # both pods of the unit are gone or terminating: the unit is whole
        assert pod not in remaining or remaining[pod]["metadata"].get("deletionTimestamp")


def pod_preempted_events(control) -> list[dict]:
    return [
        o
        for o in control.dump()
        if o.get("kind") == "Event"
        and o.get("reason") == "Preempted"
        and (o.get("regarding") or o.get("involvedObject"))["kind"] == "Pod"
    ]


def test_a_real_worker_drives_a_stuck_gang_from_detection_to_evictions(api_server, broker, tmp_path):
    """The whole chain through the broker: detect -> (on commit) plan -> (on commit) execute."""
    control = api_server.control
    control.load(small_cluster())
    env = {
        **os.environ,
        "DATABASE_URL": postgres_url_for_test_db(),
        "REDIS_URL": broker,
        "KUBECONFIG": str(api_server.kubeconfig),
        "GANGWEB_CLUSTER": "kube",
        "SECRET_KEY": "chain-test",
        "GANGWEB_DEMO": "0",
    }
    log_path = tmp_path / "worker.log"
    worker = Worker(env, log_path).start()
    sender = Celery("chain-test", broker=broker, set_as_current=False)
    try:
        sender.send_task("scheduler.detect_unschedulable_gangs")
        request = wait_until(
            lambda: PreemptionRequest.objects.filter(state=RequestState.SUCCEEDED).first(),
            60,
            "the request to succeed",
            log_path,
        )
        # Written after commit by the worker's Event recorder: one per evicted pod.
        wanted = len(request.plans.get().evictions)
        wait_until(lambda: len(pod_preempted_events(control)) == wanted, 30, "the Preempted events", log_path)
    finally:
        worker.stop()
        sender.close()
    plan = request.plans.get()
    assert (request.namespace, request.name, request.mode) == ("team-a", "train", "enforce")
    assert {pod: real_evictions(api_server, pod) for pod in plan.evictions} == {
        pod: [201] for pod in plan.evictions
    }
    kinds = list(LedgerEntry.objects.filter(request=request).order_by("id").values_list("kind", flat=True))
    assert kinds[:3] == ["request.opened", "request.planning", "plan.created"]
    assert kinds[-1] == "request.succeeded"
    conditions = next(
        o for o in control.dump() if o.get("kind") == "PodGroup" and o["metadata"]["name"] == "train"
    )["status"]["conditions"]
    assert {"type": "gangweb.io/Preemption", "status": "False", "reason": "VictimsEvicted"}.items() <= next(
        c for c in conditions if c["type"] == "gangweb.io/Preemption"
    ).items()
    events = pod_preempted_events(control)
    regarding = sorted(
        f"{(e.get('regarding') or e.get('involvedObject'))['namespace']}/"
        f"{(e.get('regarding') or e.get('involvedObject'))['name']}"
        for e in events
    )
    assert regarding == sorted(plan.evictions)
    assert {(e.get("related") or {}).get("name") for e in events} == {"train"}


def test_real_workers_plan_on_their_watch_caches_as_the_engine_does(api_server, broker, tmp_path):
    """Two worker processes, each with its own watch cache: the plan equals the engine's on the loaded objects."""
    from scheduler.engine import parse_snapshot
    from scheduler.engine import plan as engine_plan
    from scheduler.preemption.models import Plan
    from testkit.synthetic import preemptor_name, synthetic_cluster

    objects = synthetic_cluster(256, seed=5)
    api_server.control.load(objects)
    env = {
        **os.environ,
        "DATABASE_URL": postgres_url_for_test_db(),
        "REDIS_URL": broker,
        "KUBECONFIG": str(api_server.kubeconfig),
        "GANGWEB_CLUSTER": "kube",
        "SECRET_KEY": "watch-plan-test",
        "GANGWEB_DEMO": "0",
        "GANGWEB_NAMESPACE_MODES": "bench=observe",
    }
    log_path = tmp_path / "worker.log"
    worker = Worker(env, log_path, concurrency=2).start()
    sender = Celery("watch-plan-test", broker=broker, set_as_current=False)
    podgroup = preemptor_name(64)  # rack topology
    namespace, name = podgroup.split("/")
    try:
        sender.send_task("scheduler.detect_unschedulable_gangs")
        request = wait_until(
            lambda: PreemptionRequest.objects.filter(
                namespace=namespace, name=name, state=RequestState.OBSERVED
            ).first(),
            90,
            f"{podgroup} to be planned",
            log_path,
        )
    finally:
        worker.stop()
        sender.close()
    stored = Plan.objects.get(request=request)
    assert stored.planned_by == "single"
    expected = engine_plan(parse_snapshot(objects), podgroup, "gangweb").to_dict()
    got = stored.as_gang_plan()
    # The workers planned on their watch caches: the plan says which resourceVersion it was made at.
    versions = got.pop("resourceVersions")
    assert got.pop("resourceVersion") == versions["pods"] and set(versions) >= {"pods", "nodes", "podgroups"}
    # Lost work runs with the clock (GPUs x time since the last checkpoint): the worker plans at the wall
    # clock's now, the engine on a file at the snapshot's own; the victims chosen are the same.
    for victims in (got["victims"], expected["victims"]):
        assert all(v.pop("lostGpuSeconds") > 0 for v in victims)
    assert {k: v for k, v in got.items() if k != "reason"} == {
        k: v for k, v in expected.items() if k != "reason"
    }
    assert expected["evictions"]
    assert api_server.control.requests("/eviction", method="POST") == []  # observe mode
