"""The pipeline's plans keep clear of the units a queue manager placed (docs/queues.md "Never fight a queue
manager"): the victims small_cluster's plan would take are KAI's here."""

from __future__ import annotations

import pytest

from scheduler.preemption import planning
from tests.scheduler.preemption.builders import FakeCluster, small_cluster

pytestmark = pytest.mark.django_db


def _kai_placed(objects):
    for obj in objects:
        if obj.get("kind") == "Pod" and (obj.get("spec") or {}).get("nodeName"):
            obj["spec"]["schedulerName"] = "kai-scheduler"
    return objects


def test_a_plan_without_kai_s_units_says_queue_owned():
    cluster = FakeCluster(_kai_placed(small_cluster()))
    view = planning.current_view(cluster, "team-a/train")
    result = planning.compute(view, "team-a/train", "gangweb")
    assert result.plan["outcome"] == "infeasible:queue-owned"
    assert result.plan["evictions"] == [] and "KAI-Scheduler would have to reclaim" in result.plan["reason"]


def test_the_same_cluster_without_a_queue_manager_is_planned_as_before():
    cluster = FakeCluster(small_cluster())
    result = planning.compute(planning.current_view(cluster, "team-a/train"), "team-a/train", "gangweb")
    assert result.plan["outcome"] == "preempt" and sorted(result.plan["evictions"]) == [
        "batch/low-0",
        "batch/low-1",
    ]
