"""Preempt with notice, end to end: a real Celery worker with its beat (``-B``: the notice's tick) executes
against the Kubernetes API test server (its own process), over PostgreSQL and Redis.

Two victim PodGroups of one 8-GPU pod each stand between a 2x8 gang and its room. The victims are told
(``DisruptionTarget`` condition and deadline annotation on their PodGroups), save a checkpoint or not
(``gangweb.io/last-checkpoint``, written here as the workload would, through the API), and are evicted
together: as soon as both saved, or at the deadline.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from celery import Celery
from django.db import transaction
from kubernetes import client, config

from gangweb.access.scope import OPERATOR, Scope
from scheduler.kube import KubeCluster
from scheduler.preemption import actions, ledger, planning, runtime, tasks
from scheduler.preemption.execution.notice import CHECKPOINT_ANNOTATION, DEADLINE_ANNOTATION
from scheduler.preemption.models import (
    Eviction,
    EvictionState,
    LedgerEntry,
    Plan,
    PreemptionRequest,
    RequestState,
)
from tests.conftest import ROOT
from tests.scheduler.preemption.builders import T1, node, pod, podgroup
from tests.scheduler.preemption.workers import Worker, real_evictions, wait_until, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

TICK = 1.0
UNITS = ("a", "b")
VICTIMS = [f"batch/{unit}-0" for unit in UNITS]
GROUP = "/apis/scheduling.k8s.io/v1beta1/namespaces/batch/podgroups"
EXAMPLE = ROOT / "examples" / "notice" / "train.py"


def two_units() -> list[dict]:
    """Two full 8-GPU nodes, each running a low-priority gang of one pod; a pending 2x8 gang."""
    objects = [node("node-0"), node("node-1")]
    for i, unit in enumerate(UNITS):
        objects += [
            podgroup("batch", unit, min_count=1, priority=10),
            pod("batch", f"{unit}-0", group=unit, priority=10, node_name=f"node-{i}"),
        ]
    objects += [podgroup("team-a", "train", min_count=2, priority=100, unschedulable=True)]
    objects += [pod("team-a", f"train-{i}", group="train", priority=100, created=T1) for i in range(2)]
    return objects


def env_for(api_server, broker, notice: int) -> dict[str, str]:
    return worker_env(
        api_server,
        broker,
        GANGWEB_PREEMPTION_NOTICE_SECONDS=str(notice),
        GANGWEB_PREEMPTION_NOTICE_TICK_SECONDS=str(TICK),
        GANGWEB_BEAT_LOCK_SECONDS="2",
        GANGWEB_LOCK_TTL_SECONDS="10",
        GANGWEB_KUBE_REQUEST_TIMEOUT_SECONDS="3",
    )


def planned(cluster: KubeCluster, mode: str = "enforce") -> tuple[PreemptionRequest, Plan]:
    request, _ = ledger.open_request("team-a", "train", mode=mode, trigger="notice test")
    ledger.begin_planning(request.pk)
    result = planning.compute(planning.fresh_objects(cluster), request.podgroup, "gangweb")
    plan = ledger.record_plan(request.pk, result.plan, cost=result.cost, pods=result.pods)
    assert sorted(plan.evictions) == VICTIMS and plan.victim_units == 2, "the scenario needs both units"
    return request, plan


def group_of(api_server, name: str) -> dict:
    [found] = [
        o
        for o in api_server.control.dump()
        if o.get("kind") == "PodGroup"
        and o["metadata"]["namespace"] == "batch"
        and o["metadata"]["name"] == name
    ]
    return found


def notice_condition(group: dict) -> dict | None:
    conditions = (group.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "DisruptionTarget"), None)


def checkpoint(api_server, unit: str, when: datetime) -> None:
    """What the example workload does after saving: the annotation on its PodGroup, through the API."""
    api = client.CustomObjectsApi(config.new_client_from_config(str(api_server.kubeconfig)))
    stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    api.patch_namespaced_custom_object(
        "scheduling.k8s.io",
        "v1beta1",
        "batch",
        "podgroups",
        unit,
        {"metadata": {"annotations": {CHECKPOINT_ANNOTATION: stamp}}},
    )


def noticed(plan: Plan) -> Plan:
    return wait_until(
        lambda: Plan.objects.filter(pk=plan.pk, notice_given_at__isnull=False).first(), 60, "the notice"
    )


def looks_after(log_path, count: int) -> None:
    """Wait until the worker has finished ``count`` more executions that found the notice still running."""
    start = log_path.read_text().count("'notice'")
    wait_until(lambda: log_path.read_text().count("'notice'") >= start + count, 30, "looks", log_path)


def assert_all_evicted_once() -> None:
    assert set(Eviction.objects.values_list("state", flat=True)) == {EvictionState.EVICTED}
    assert LedgerEntry.objects.filter(kind="notice.given").count() == 1


def assert_notice_over(api_server) -> None:
    """Evicted, the victims' PodGroups no longer show a notice running (read once the request succeeded)."""
    for unit in UNITS:
        group = group_of(api_server, unit)
        assert DEADLINE_ANNOTATION not in (group["metadata"].get("annotations") or {}), unit
        condition = notice_condition(group)
        assert (condition["status"], condition["reason"]) == ("False", "PreemptionCompleted"), unit
        assert f"plan {Plan.objects.get().pk}" in condition["message"]


@pytest.fixture
def started(api_server, broker, tmp_path):
    api_server.control.load(two_units())
    cluster = KubeCluster.from_kubeconfig(api_server.kubeconfig)
    runtime.set_cluster(cluster)
    sender = Celery("notice-test", broker=broker, set_as_current=False)
    workers: list[Worker] = []
    log_path = tmp_path / "worker.log"

    def start(notice: int) -> Worker:
        worker = Worker(
            env_for(api_server, broker, notice), log_path, beat_schedule=tmp_path / "beat"
        ).start()
        workers.append(worker)
        return worker

    yield cluster, sender, start, log_path
    for worker in workers:
        worker.stop()
    sender.close()
    runtime.reset_cluster()


def test_victims_are_told_then_evicted_together_within_a_tick_of_the_last_checkpoint(api_server, started):
    cluster, sender, start, log_path = started
    request, plan = planned(cluster)
    start(notice=300)
    sender.send_task("scheduler.execute_plan", args=[request.pk])
    plan = noticed(plan)
    assert plan.notice_deadline - plan.notice_given_at == timedelta(seconds=300)
    deadline = plan.notice_deadline.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for unit in UNITS:
        group = wait_until(
            lambda unit=unit: notice_condition(group_of(api_server, unit)) and group_of(api_server, unit),
            30,
            f"the notice on {unit}",
            log_path,
        )
        condition = notice_condition(group)
        assert (condition["status"], condition["reason"]) == ("True", "PreemptionNotice")
        assert deadline in condition["message"]
        assert group["metadata"]["annotations"][DEADLINE_ANNOTATION] == deadline

    checkpoint(api_server, "a", datetime.now(UTC))
    looks_after(log_path, 2)  # one unit saved is not enough
    assert not any(real_evictions(api_server, p) for p in VICTIMS)
    assert PreemptionRequest.objects.get(pk=request.pk).state == RequestState.EXECUTING

    saved = datetime.now(UTC)
    checkpoint(api_server, "b", saved)
    wait_until(
        lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.SUCCEEDED,
        60,
        "the evictions",
        log_path,
    )
    first = min(Eviction.objects.values_list("requested_at", flat=True))
    # Within one tick, plus what one execution takes on a loaded machine; the deadline is minutes away.
    assert first - saved < timedelta(seconds=TICK + 10)
    for p in VICTIMS:
        assert [code for code in real_evictions(api_server, p) if code < 300] == [201], p
    assert_all_evicted_once()
    assert_notice_over(api_server)
    ended = LedgerEntry.objects.get(kind="notice.ended")
    assert "every victim unit saved" in ended.message
    for row in Eviction.objects.all():  # lost since the checkpoint, not since the pod started an hour ago
        assert row.lost_gpu_seconds is not None and row.lost_gpu_seconds < 8 * 60


@pytest.mark.parametrize("saving", [(), ("a",)], ids=["none-saves", "one-never-saves"])
def test_at_the_deadline_every_unit_is_evicted(api_server, started, saving):
    cluster, sender, start, log_path = started
    request, plan = planned(cluster)
    start(notice=6)
    sender.send_task("scheduler.execute_plan", args=[request.pk])
    plan = noticed(plan)
    for unit in saving:
        checkpoint(api_server, unit, datetime.now(UTC))
    wait_until(
        lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.SUCCEEDED,
        60,
        "the evictions at the deadline",
        log_path,
    )
    assert min(Eviction.objects.values_list("requested_at", flat=True)) >= plan.notice_deadline
    assert_all_evicted_once()
    assert_notice_over(api_server)
    assert "deadline" in LedgerEntry.objects.get(kind="notice.ended").message
    lost = dict(Eviction.objects.values_list("name", "lost_gpu_seconds"))
    started_at = datetime(2026, 11, 30, 8, tzinfo=UTC)  # builders.T0: the victims' start
    for unit in UNITS:
        if unit in saving:
            assert lost[f"{unit}-0"] < 8 * 60
        else:
            assert lost[f"{unit}-0"] >= 8 * (plan.notice_deadline - started_at).total_seconds()


def test_a_worker_killed_mid_notice_is_repaired_without_a_second_notice(api_server, started):
    cluster, sender, start, log_path = started
    control = api_server.control
    request, plan = planned(cluster)
    # The notice's annotation on b hangs in the API server, then fails: the worker dies while telling.
    control.add_fault(f"^{re.escape(GROUP)}/b$", code=503, method="PATCH", times=1, delay=4.0)
    first = start(notice=300)
    sender.send_task("scheduler.execute_plan", args=[request.pk])
    plan = noticed(plan)
    wait_until(lambda: all(f["hits"] for f in control.faults()), 30, "the hanging annotation", log_path)
    first.kill()
    assert DEADLINE_ANNOTATION not in (group_of(api_server, "b")["metadata"].get("annotations") or {})

    start(notice=300)  # the successor: its beat's tick resumes the notice
    deadline = plan.notice_deadline.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    wait_until(
        lambda: (
            (group_of(api_server, "b")["metadata"].get("annotations") or {}).get(DEADLINE_ANNOTATION)
            == deadline
        ),
        60,
        "the successor to tell b, with the first deadline",
        log_path,
    )
    assert not any(real_evictions(api_server, p) for p in VICTIMS)
    for unit in UNITS:
        checkpoint(api_server, unit, datetime.now(UTC))
    wait_until(
        lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.SUCCEEDED,
        60,
        "the evictions",
        log_path,
    )
    for p in VICTIMS:
        assert [code for code in real_evictions(api_server, p) if code < 300] == [201], p
    assert_all_evicted_once()
    assert Plan.objects.get(pk=plan.pk).notice_deadline == plan.notice_deadline


def test_the_notice_is_withdrawn_when_the_gang_fits_anyway(api_server, started):
    cluster, sender, start, log_path = started
    request, plan = planned(cluster)
    start(notice=300)
    sender.send_task("scheduler.execute_plan", args=[request.pk])
    noticed(plan)
    wait_until(lambda: notice_condition(group_of(api_server, "b")), 30, "the notice on b", log_path)

    # Two nodes join and kube-scheduler places the gang there: it no longer needs the victims' room.
    core = client.CoreV1Api(config.new_client_from_config(str(api_server.kubeconfig)))
    for i in range(2):
        core.delete_namespaced_pod(f"train-{i}", "team-a")
    api_server.control.finish_terminating()
    api_server.control.load(
        [node(f"node-{i}") for i in (2, 3)]
        + [
            pod("team-a", f"train-{i}", group="train", priority=100, created=T1, node_name=f"node-{i + 2}")
            for i in range(2)
        ]
    )
    wait_until(
        lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.SUPERSEDED,
        60,
        "the notice to be withdrawn",
        log_path,
    )
    request.refresh_from_db()
    assert request.reason.startswith("notice withdrawn, nothing evicted")
    assert LedgerEntry.objects.filter(kind="notice.withdrawn").count() == 1
    assert Plan.objects.get(pk=plan.pk).notice_withdrawn_at is not None
    for unit in UNITS:
        group = group_of(api_server, unit)
        assert DEADLINE_ANNOTATION not in (group["metadata"].get("annotations") or {})
        assert (notice_condition(group)["status"], notice_condition(group)["reason"]) == (
            "False",
            "PreemptionWithdrawn",
        )
    assert not any(real_evictions(api_server, p) for p in VICTIMS)
    assert set(Eviction.objects.values_list("state", flat=True)) == {EvictionState.FAILED}


def test_an_approved_plan_gives_its_notice_before_evicting(api_server, started, broker, monkeypatch):
    cluster, sender, start, log_path = started
    # This process hands the execution to the worker's broker, as the web process would to its own.
    monkeypatch.setattr(
        tasks,
        "after_commit",
        lambda task, *args, **options: transaction.on_commit(
            lambda: sender.send_task(task.name, args=list(args))
        ),
    )
    start(notice=300)
    request, _ = ledger.open_request("team-a", "train", mode="approve", trigger="notice test")
    ledger.begin_planning(request.pk)
    result = planning.compute(planning.fresh_objects(cluster), request.podgroup, "gangweb")
    tasks.after_plan(request.pk, result, planned_by="single")
    request.refresh_from_db()
    assert request.state == RequestState.AWAITING_APPROVAL
    plan = request.plans.get()
    assert plan.notice_given_at is None  # nobody is told before an operator approves

    actions.approve(request.pk, by=Scope(user="olga", per_namespace={"team-a": OPERATOR}))
    plan = noticed(plan)
    for unit in UNITS:
        wait_until(
            lambda unit=unit: notice_condition(group_of(api_server, unit)), 30, f"notice on {unit}", log_path
        )
        checkpoint(api_server, unit, datetime.now(UTC))
    wait_until(
        lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.SUCCEEDED,
        60,
        "the evictions",
        log_path,
    )
    assert_all_evicted_once()
    kinds = list(request.history.order_by("id").values_list("kind", flat=True))
    assert kinds.index("request.approved") < kinds.index("notice.given") < kinds.index("execution.evicting")


def test_the_example_workload_saves_on_notice_and_its_gang_is_evicted_long_before_the_deadline(
    api_server, started, tmp_path
):
    """examples/notice/train.py, one process per victim gang (checkpoints on notice only), against the same
    API server: the protocol end to end."""
    cluster, sender, start, log_path = started
    request, plan = planned(cluster)
    token = tmp_path / "token"
    token.write_text("gangweb-test-token")
    workloads = []
    for unit in UNITS:
        env = {
            **os.environ,
            "PODGROUP": unit,
            "POD_NAMESPACE": "batch",
            "CHECKPOINT_DIR": str(tmp_path / unit),
            "CHECKPOINT_EVERY": "0",
            "STEP_SECONDS": "0.2",
            "KUBERNETES_API": api_server.url,
            "TOKEN_FILE": str(token),
            "CA_FILE": str(tmp_path / "no-ca"),
        }
        out = open(tmp_path / f"{unit}.log", "wb")  # noqa: SIM115 (closed with the process below)
        workloads.append(
            (subprocess.Popen([sys.executable, str(EXAMPLE)], env=env, stdout=out, stderr=out), out)
        )
    start(notice=300)
    try:
        sender.send_task("scheduler.execute_plan", args=[request.pk])
        wait_until(
            lambda: PreemptionRequest.objects.get(pk=request.pk).state == RequestState.SUCCEEDED,
            90,
            "the example workloads to save and their gangs to be evicted",
            log_path,
        )
    finally:
        for process, out in workloads:
            process.terminate()
            process.wait(timeout=10)
            out.close()
    plan.refresh_from_db()
    assert max(Eviction.objects.values_list("requested_at", flat=True)) < plan.notice_deadline - timedelta(
        seconds=200
    )
    assert "every victim unit saved" in LedgerEntry.objects.get(kind="notice.ended").message
    for unit in UNITS:
        assert json.loads((tmp_path / unit / "checkpoint.json").read_text())["step"] > 0
        assert "notice until" in (tmp_path / f"{unit}.log").read_text()
    assert_all_evicted_once()
