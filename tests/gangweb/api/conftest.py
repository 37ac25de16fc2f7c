"""Ledger rows made by the real pipeline (ledger, planning, execution) against scripted clusters."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest

from scheduler.preemption import ledger, planning, runtime
from scheduler.preemption.execution import execute
from scheduler.preemption.execution.evictor import RetryPolicy
from scheduler.preemption.models import Plan, PreemptionRequest
from tests.scheduler.preemption.builders import FakeCluster, small_cluster

FAST = RetryPolicy(attempts=3, first_delay=0.01, max_delay=0.02)


@dataclass
class Made:
    request: PreemptionRequest
    plan: Plan
    engine_plan: dict  # what the engine answered, before the ledger stored it
    cost: dict
    cluster: FakeCluster


@pytest.fixture
def make_request(published, settings):
    """Open, plan and (unless ``execute_it`` is False) execute a request for ``<namespace>/train``.

    ``refuse`` names a victim pod whose dry run the cluster answers 429, so the request fails.
    """
    settings.GANGWEB_LOCK_TTL_SECONDS = 2

    def make(
        namespace: str = "team-a",
        *,
        execute_it: bool = True,
        refuse: bool = False,
        mode: str = "enforce",
        extra_objects: list | None = None,
    ) -> Made:
        cluster = FakeCluster(small_cluster(preemptor_ns=namespace) + list(extra_objects or []))
        runtime.set_cluster(cluster)
        request, _ = ledger.open_request(namespace, "train", mode=mode, trigger="test: pending for 45s")
        ledger.begin_planning(request.pk)
        result = planning.compute(cluster.snapshot_objects(), request.podgroup, request.policy)
        stored = ledger.record_plan(
            request.pk,
            result.plan,
            cost=result.cost,
            pods=result.pods,
            planning_seconds=result.seconds,
            decision=result.decision,
        )
        if refuse:
            cluster.dry_run_answers[sorted(result.plan["evictions"])[-1]] = 429
        if execute_it:
            execute(request.pk, cluster, retry=FAST)
        request.refresh_from_db()
        stored.refresh_from_db()
        return Made(request, stored, result.plan, result.cost, cluster)

    yield make
    runtime.reset_cluster()


@pytest.fixture
def reader(django_user_model):
    # Admin everywhere (``scope_for`` of a superuser) until ``manage.py access grant`` lands; then a
    # viewer of every namespace: ``access grant platform-team --role viewer --all-namespaces``.
    return django_user_model.objects.create_superuser("platform-team", password="s3cret-enough")


def basic_auth(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"HTTP_AUTHORIZATION": f"Basic {token}"}
