"""The optional abilities of a cluster (scheduler/cluster.py) are Protocols the adapters meet as they are."""

from __future__ import annotations

import pytest

from scheduler.cluster import BoundedCalls, Cluster, FreshSnapshots, HoldsDevices, ListsEvents

ABILITIES = (FreshSnapshots, ListsEvents, BoundedCalls, HoldsDevices)


@pytest.fixture
def kube_cluster():
    from kubernetes import client

    from scheduler.kube import KubeCluster

    cluster = KubeCluster(client.Configuration(host="http://127.0.0.1:9"))  # never called here
    yield cluster
    cluster.close()


def abilities(cluster) -> set[type]:
    return {ability for ability in ABILITIES if isinstance(cluster, ability)}


def test_the_kube_adapter_relists_lists_events_and_bounds_its_calls(kube_cluster):
    assert isinstance(kube_cluster, Cluster)
    assert abilities(kube_cluster) == {FreshSnapshots, ListsEvents, BoundedCalls}
    assert kube_cluster.request_timeout == sum(kube_cluster.timeout)


def test_the_simulation_says_which_pod_holds_which_gpu():
    from scheduler.simulation import SimulatedCluster

    simulated = SimulatedCluster(nodes=8, seed=1)
    assert isinstance(simulated, Cluster)
    assert abilities(simulated) == {HoldsDevices}


def test_a_plain_cluster_has_none_of_them():
    from tests.scheduler.preemption.builders import FakeCluster, small_cluster

    assert abilities(FakeCluster(small_cluster())) == set()
