"""The reaper under a CompositePodGroup short of its minGroupCount: the gangs it breaks are reaped as the
engine preempts a composite, the highest ``disruptionMode: all`` composite's whole tree of bound pods as
one unit, through one request (re-check, UIDs, approve mode); below no ``all`` composite, gang by gang."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.utils import timezone

from gangweb.access.scope import OPERATOR, Scope
from scheduler.preemption import actions, healthwatch, reaper, runtime
from scheduler.preemption.models import (
    BrokenGang,
    Eviction,
    EvictionState,
    PreemptionRequest,
    RequestState,
)
from tests.scheduler.preemption.builders import FakeCluster, composite, node, pod, podgroup

pytestmark = pytest.mark.django_db(transaction=True)

GRACE = 300
REPLICAS = ("replica-0", "replica-1", "replica-2")
# replica-0 lost replica-0-1: the tree's bound pods left.
TREE_PODS = [
    "team-a/replica-0-0",
    "team-a/replica-1-0",
    "team-a/replica-1-1",
    "team-a/replica-2-0",
    "team-a/replica-2-1",
]


def serving(disruption: str) -> list[dict]:
    """team-a: a basic CompositePodGroup ``fleet`` above ``serve`` (minGroupCount 3, ``disruption``) above
    three replicas of two 8-GPU pods (minCount 2), one of which lost a member; and ``batch``, a gang
    outside the tree, running whole."""
    objects = [node(f"node-{i}") for i in range(8)]
    objects += [
        composite("team-a", "fleet", min_group_count=None, disruption="single"),
        composite("team-a", "serve", min_group_count=3, disruption=disruption, parent="fleet"),
    ]
    for r, name in enumerate(REPLICAS):
        group = podgroup("team-a", name, min_count=2, priority=100)
        group["spec"]["parentCompositePodGroupName"] = "serve"
        objects.append(group)
        objects += [
            pod("team-a", f"{name}-{i}", group=name, priority=100, node_name=f"node-{2 * r + i}")
            for i in range(2)
            if f"{name}-{i}" != "replica-0-1"
        ]
    objects.append(podgroup("team-a", "batch", min_count=2, priority=50))
    objects += [
        pod("team-a", f"batch-{i}", group="batch", priority=50, node_name=f"node-{6 + i}") for i in range(2)
    ]
    return objects


@pytest.fixture
def reaping(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.GANGWEB_LOCK_TTL_SECONDS = 2
    settings.GANGWEB_REAP_GRACE_SECONDS = GRACE
    settings.GANGWEB_NAMESPACE_REAPERS = {"team-a": "evict"}

    def start(disruption: str) -> FakeCluster:
        cluster = FakeCluster(serving(disruption))
        runtime.set_cluster(cluster)
        assert healthwatch.sweep(cluster.snapshot_objects())["broken"] == [f"team-a/{r}" for r in REPLICAS]
        BrokenGang.objects.update(since=timezone.now() - timedelta(seconds=GRACE + 1))
        return cluster

    yield start
    runtime.reset_cluster()


def uids(cluster: FakeCluster, keys: list[str]) -> dict[str, str]:
    return {key: cluster.get_pod(*key.split("/"))["metadata"]["uid"] for key in keys}


def test_a_composite_short_of_groups_is_reaped_whole_as_its_all_ancestor_unit_by_one_request(reaping):
    cluster = reaping("all")
    expected = uids(cluster, TREE_PODS)

    [request_id] = reaper.sweep(cluster.snapshot_objects())
    request = PreemptionRequest.objects.get(pk=request_id)
    assert (request.podgroup, request.policy, request.state) == (
        "team-a/replica-0",
        "reap",
        RequestState.SUCCEEDED,
    ), request.reason
    rows = list(Eviction.objects.filter(plan__request=request))
    assert {r.pod: r.pod_uid for r in rows} == expected
    assert {r.victim_unit for r in rows} == {"CompositePodGroup team-a/serve"}
    assert all(r.state == EvictionState.EVICTED for r in rows)
    assert cluster.evictions_of("evict") == {key: 1 for key in TREE_PODS}  # batch untouched
    assert set(BrokenGang.objects.values_list("name", "reaped_by")) == {(r, request_id) for r in REPLICAS}

    # Nothing more to reap: the siblings' episodes ended with the tree, and the tree holds nothing now.
    assert reaper.sweep(cluster.snapshot_objects()) == []
    assert sorted(healthwatch.sweep(cluster.snapshot_objects())["recovered"]) == [
        f"team-a/{r}" for r in REPLICAS
    ]
    assert cluster.evictions_of("evict") == {key: 1 for key in TREE_PODS}


def test_below_no_all_composite_each_broken_gang_is_reaped_alone(reaping):
    cluster = reaping("single")
    opened = reaper.sweep(cluster.snapshot_objects())
    requests = PreemptionRequest.objects.filter(pk__in=opened).order_by("name")
    assert [(r.name, r.state) for r in requests] == [(r, RequestState.SUCCEEDED) for r in REPLICAS]
    units = {r.pod: r.victim_unit for r in Eviction.objects.filter(plan__request__in=requests)}
    assert units == {key: f"PodGroup team-a/{key.split('/')[1].rsplit('-', 1)[0]}" for key in TREE_PODS}
    assert cluster.evictions_of("evict") == {key: 1 for key in TREE_PODS}


def test_a_composite_no_longer_short_when_its_reap_runs_is_not_evicted(reaping):
    cluster = reaping("all")
    stale = cluster.snapshot_objects()
    # minGroupCount lowered to 2 after the reaper's pass read the cluster: replica-0 is still broken by
    # its own lost member, but the composite (the unit planned) is satisfied.
    lowered = copy.deepcopy(cluster.objects[("CompositePodGroup", "team-a/serve")])
    lowered["spec"]["schedulingPolicy"]["gang"]["minGroupCount"] = 2
    cluster.objects[("CompositePodGroup", "team-a/serve")] = lowered

    [request_id] = reaper.sweep(stale)
    request = PreemptionRequest.objects.get(pk=request_id)
    assert request.state == RequestState.SUPERSEDED
    assert "not short of its minGroupCount any more" in request.reason
    assert cluster.evictions_of("evict") == {} and cluster.evictions_of("dry_run") == {}


def test_in_approve_mode_the_trees_reap_waits_then_evicts_the_same_pods_by_uid(reaping, settings):
    settings.GANGWEB_NAMESPACE_MODES = {"team-a": "approve"}
    cluster = reaping("all")
    expected = uids(cluster, TREE_PODS)
    [request_id] = reaper.sweep(cluster.snapshot_objects())
    assert PreemptionRequest.objects.get(pk=request_id).state == RequestState.AWAITING_APPROVAL
    assert reaper.sweep(cluster.snapshot_objects()) == []  # one request for the whole tree
    assert cluster.evictions_of("evict") == {}

    actions.approve(request_id, by=Scope(user="olga", per_namespace={"team-a": OPERATOR}))
    request = PreemptionRequest.objects.get(pk=request_id)
    assert request.state == RequestState.SUCCEEDED, request.reason
    assert {r.pod: r.pod_uid for r in Eviction.objects.filter(plan__request=request)} == expected
    assert cluster.evictions_of("evict") == {key: 1 for key in TREE_PODS}
