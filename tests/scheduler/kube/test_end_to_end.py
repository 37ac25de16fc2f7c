"""The seam works end to end: adapter snapshot -> engine plan -> evictions through the Eviction API."""

from __future__ import annotations

import kubernetes_validate.utils
import pytest

from kubetestserver import KubeTestServer
from scheduler.cluster import ClusterEvent, of_kind, split_key
from scheduler.engine import parse_snapshot, plan
from scheduler.kube import KubeCluster

from .objects import full_cluster, small_cluster


@pytest.mark.parametrize(
    "obj", small_cluster() + full_cluster(), ids=lambda o: f"{o['kind']}-{o['metadata']['name']}"
)
def test_fixture_objects_are_valid_1_37_objects(obj):
    kubernetes_validate.utils.validate(obj, "1.37.0", strict=True)


def test_plan_from_the_adapter_and_execute_it_through_the_eviction_api(tmp_path):
    with KubeTestServer(bookmark_interval=0.2) as server:
        server.load(full_cluster())
        server.store.graceful_pod_deletion = True  # victims stay visible, terminating, with their marks
        with KubeCluster.from_kubeconfig(server.write_kubeconfig(tmp_path / "kc")) as cluster:
            result = plan(parse_snapshot(cluster.snapshot_objects()), "team-a/high-gang")
            assert result.feasible and result.evictions
            victims = [split_key(key) for key in result.evictions]

            assert all(cluster.evict(ns, name, dry_run=True).ok for ns, name in victims)
            for ns, name in victims:
                cluster.mark_disruption_target(
                    ns, name, "gangweb: preempting to accommodate a higher priority podgroup"
                )
                assert cluster.evict(ns, name).code == 201
                cluster.record_event(
                    ClusterEvent(
                        ns,
                        "Pod",
                        name,
                        "Preempted",
                        "Preempted by podgroup team-a/high-gang",
                        related_kind="PodGroup",
                        related_name="high-gang",
                    )
                )

            def victims_terminating(objects):
                pods = {p["metadata"]["name"]: p for p in of_kind(objects, "Pod")}
                return all(pods[name]["metadata"].get("deletionTimestamp") for _, name in victims)

            assert cluster.wait_for(victims_terminating, 5)
            for _, name in victims:
                pod = cluster.get_pod("team-a", name)
                marks = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
                # the Eviction API re-marks the pod it evicts, as a real API server does
                assert [(m["status"], m["reason"]) for m in marks] == [("True", "EvictionByEvictionAPI")]
            assert sorted(e["regarding"]["name"] for e in cluster.list_events(reason="Preempted")) == sorted(
                name for _, name in victims
            )

            server.finish_terminating()
            assert cluster.wait_for(
                lambda objs: (
                    not any(p["metadata"]["name"] in {n for _, n in victims} for p in of_kind(objs, "Pod"))
                ),
                5,
            )
            after = plan(parse_snapshot(cluster.fresh_snapshot()), "team-a/high-gang")
            assert after.feasible and after.evictions == [], "the gang now fits without further evictions"
