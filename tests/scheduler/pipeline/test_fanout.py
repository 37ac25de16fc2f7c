"""Planning spread over Celery tasks returns the plan the engine gives in one process."""

from __future__ import annotations

import re

import pytest

from scheduler import ledger, runtime
from scheduler.engine import parse_snapshot, plan as engine_plan
from scheduler.engine.synthetic import preemptor_name, synthetic_cluster
from scheduler.models import LedgerEntry, Plan, PreemptionRequest, RequestState
from scheduler.tasks import plan_request
from tests.scheduler.pipeline.builders import FakeCluster

pytestmark = pytest.mark.django_db(transaction=True)

COUNTS = re.compile(r"cheapest of \d+ candidate plan\(s\) over \d+ domain\(s\)")


def without_counts(reason: str) -> str:
    return COUNTS.sub("cheapest of N candidate plan(s) over M domain(s)", reason)


@pytest.fixture(autouse=True)
def fan_out_everything(settings, redis_url):
    settings.REDIS_URL = redis_url  # the snapshot travels through Redis
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the chord runs in this process; test_crash runs a real one
    settings.GANGWEB_FANOUT_MIN_NODES = 100
    settings.GANGWEB_FANOUT_PARTS = 3
    yield
    runtime.reset_cluster()


@pytest.mark.parametrize("nodes, seed, gpus", [(256, 1, 64), (256, 2, 64), (512, 3, 64), (1024, 4, 256)])
def test_fanned_out_plan_equals_the_in_process_plan(nodes, seed, gpus):
    objects = synthetic_cluster(nodes, seed=seed)
    runtime.set_cluster(FakeCluster(objects))
    podgroup = preemptor_name(gpus)
    namespace, name = podgroup.split("/")
    request, _ = ledger.open_request(namespace, name, mode="observe", trigger="test")

    plan_request.apply(args=[request.pk]).get()

    request.refresh_from_db()
    stored = Plan.objects.get(request=request)
    assert stored.planned_by == "fan-out:3", "the plan was not fanned out"
    shards = LedgerEntry.objects.get(request=request, kind="plan.fan_out").data["shards"]
    assert len(shards) == 3 and len({d for shard in shards for d in shard}) > 3
    expected = engine_plan(parse_snapshot(objects), podgroup, "gangweb").to_dict()
    got = stored.as_gang_plan()
    # The reason counts the candidates the deciding task looked at: one shard's, not all of them.
    assert without_counts(got.pop("reason")) == without_counts(expected.pop("reason"))
    assert got == expected
    assert expected["feasible"] and expected["evictions"], "the case must need preemption"
    assert request.state == RequestState.OBSERVED


def test_small_clusters_plan_in_one_task(settings):
    settings.GANGWEB_FANOUT_MIN_NODES = 10_000
    runtime.set_cluster(FakeCluster(synthetic_cluster(256, seed=1)))
    namespace, name = preemptor_name(64).split("/")
    request, _ = ledger.open_request(namespace, name, mode="observe", trigger="test")
    plan_request.apply(args=[request.pk]).get()
    assert Plan.objects.get(request=request).planned_by == "single"
    assert not PreemptionRequest.objects.filter(history__kind="plan.fan_out").exists()
