"""The demo's simulated gangs reach the webhook as a real cluster's pods would; other clusters' do not."""

from __future__ import annotations

from admission.runtime import get_webhook
from gangweb.dashboard.admitting import admit_submitted
from scheduler.cluster import SubmitsGangs
from scheduler.simulation import SimulatedCluster


def test_the_simulations_submitted_gangs_are_reviewed_pod_by_pod():
    cluster = SimulatedCluster(nodes=16, seed=7)
    assert isinstance(cluster, SubmitsGangs)
    changes = next(
        c for c in (cluster.tick() for _ in range(500)) if any(x["type"] == "gang-submitted" for x in c)
    )
    submitted = [c["podGroup"] for c in changes if c.get("type") == "gang-submitted"]
    expected = sum(len(cluster.pods_of(key)[1]) for key in submitted)
    before = get_webhook().recorder.offered
    assert admit_submitted(cluster, changes) == expected > 0
    assert get_webhook().recorder.offered - before == expected  # each patched pod is a decision


def test_a_cluster_that_does_not_submit_gangs_has_nothing_reviewed():
    class Plain:  # the Cluster surface without SubmitsGangs, as a real cluster's adapter
        def snapshot_objects(self):
            return []

    assert not isinstance(Plain(), SubmitsGangs)
    assert admit_submitted(Plain(), [{"type": "gang-submitted", "podGroup": "a/g"}]) == 0
