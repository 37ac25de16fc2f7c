"""The reaper: a gang broken past the grace period in an ``evict`` namespace has its remaining members
evicted as one unit through the preemption's ledger and execution path; never within the grace, never
while a member is being restarted, never in a ``report`` namespace or for a gang a queue manager owns;
approve mode's wait applies."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.preemption import healthwatch, reaper, runtime
from scheduler.preemption.models import (
    BrokenGang,
    Eviction,
    EvictionState,
    LedgerEntry,
    PreemptionRequest,
    RequestState,
)
from tests.scheduler.preemption.builders import FakeCluster, node, pod, podgroup

pytestmark = pytest.mark.django_db(transaction=True)

GRACE = 300


@pytest.fixture
def broken(settings):
    """team-a/train (minCount 4) lost a member: 3 pods on node-0..2 hold 24 GPUs. Recorded broken."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_LOCK_TTL_SECONDS = 2
    settings.GANGWEB_REAP_GRACE_SECONDS = GRACE
    settings.GANGWEB_NAMESPACE_REAPERS = {"team-a": "evict"}
    objects = [node(f"node-{i}") for i in range(4)]
    objects += [podgroup("team-a", "train", min_count=4, priority=100)]
    objects += [
        pod("team-a", f"train-{i}", group="train", priority=100, node_name=f"node-{i}") for i in range(3)
    ]
    cluster = FakeCluster(objects)
    runtime.set_cluster(cluster)
    assert healthwatch.sweep(cluster.snapshot_objects())["broken"] == ["team-a/train"]
    yield cluster
    runtime.reset_cluster()


def age(seconds: float) -> None:
    """The open episode began ``seconds`` ago."""
    BrokenGang.objects.filter(recovered_at__isnull=True).update(
        since=timezone.now() - timedelta(seconds=seconds)
    )


def test_a_broken_gang_past_the_grace_is_evicted_once_by_uid_as_one_unit(broken):
    cluster = broken
    uids = {f"team-a/train-{i}": cluster.get_pod("team-a", f"train-{i}")["metadata"]["uid"] for i in range(3)}
    assert reaper.sweep(cluster.snapshot_objects()) == []  # broken moments ago: within the grace
    age(GRACE + 1)

    [request_id] = reaper.sweep(cluster.snapshot_objects())
    request = PreemptionRequest.objects.get(pk=request_id)
    assert (request.policy, request.mode, request.state) == ("reap", "enforce", RequestState.SUCCEEDED), (
        request.reason
    )
    rows = list(Eviction.objects.filter(plan__request=request))
    assert {r.pod: r.pod_uid for r in rows} == uids
    assert {r.victim_unit for r in rows} == {"PodGroup team-a/train"}
    assert all(r.state == EvictionState.EVICTED for r in rows)
    assert cluster.evictions_of("evict") == {pod: 1 for pod in uids}
    assert cluster.podgroup_conditions == []  # no preemptor to tell
    kinds = list(LedgerEntry.objects.filter(request=request).order_by("id").values_list("kind", flat=True))
    assert kinds[0] == "request.opened" and "plan.created" in kinds and kinds[-1] == "request.succeeded"

    # The next pass opens nothing: the reap is done, and the gang holds nothing any more.
    assert reaper.sweep(cluster.snapshot_objects()) == []
    assert healthwatch.sweep(cluster.snapshot_objects())["recovered"] == ["team-a/train"]
    assert cluster.evictions_of("evict") == {pod: 1 for pod in uids}


def test_a_member_restarting_within_the_grace_keeps_the_gang_from_being_reaped(broken):
    cluster = broken
    age(GRACE + 1)
    replacement = pod("team-a", "train-3", group="train", priority=100)
    replacement["metadata"]["creationTimestamp"] = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.objects[("Pod", "team-a/train-3")] = replacement
    assert reaper.sweep(cluster.snapshot_objects()) == []
    assert PreemptionRequest.objects.count() == 0 and cluster.evictions_of("evict") == {}


def test_report_namespaces_and_queue_managed_gangs_are_reported_not_reaped(broken, settings):
    cluster = broken
    age(GRACE + 1)
    settings.GANGWEB_NAMESPACE_REAPERS = {}  # the default: report
    assert reaper.sweep(cluster.snapshot_objects()) == []
    settings.GANGWEB_NAMESPACE_REAPERS = {"team-a": "evict"}
    owned = copy.deepcopy(cluster.objects[("PodGroup", "team-a/train")])
    owned["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "team-a-queue"
    cluster.objects[("PodGroup", "team-a/train")] = owned
    assert reaper.sweep(cluster.snapshot_objects()) == []
    assert PreemptionRequest.objects.count() == 0
    assert LedgerEntry.objects.filter(kind="gang.broken").count() == 1  # reported: the ledger says it


def test_in_approve_mode_a_reap_waits_for_an_operator(broken, settings):
    cluster = broken
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "approve"}
    age(GRACE + 1)
    [request_id] = reaper.sweep(cluster.snapshot_objects())
    assert PreemptionRequest.objects.get(pk=request_id).state == RequestState.AWAITING_APPROVAL
    assert cluster.evictions_of("evict") == {}


def test_a_gang_that_recovered_before_its_reap_ran_is_not_evicted(broken):
    cluster = broken
    age(GRACE + 1)
    cluster.objects[("Pod", "team-a/train-3")] = pod(
        "team-a", "train-3", group="train", priority=100, node_name="node-3"
    )
    # the reaper's pass judged on what it read before the member came back
    stale = [o for o in cluster.snapshot_objects() if o["metadata"].get("name") != "train-3"]
    [request_id] = reaper.sweep(stale)
    request = PreemptionRequest.objects.get(pk=request_id)
    assert request.state == RequestState.SUPERSEDED and "not broken any more" in request.reason
    assert cluster.evictions_of("evict") == {} and cluster.evictions_of("dry_run") == {}
