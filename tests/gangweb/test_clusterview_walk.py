"""The GPU map's picture and the API's rows are built from one walk over the reading
(gangweb/clusterview/walk.py): on a cluster where they used to disagree, they say the same thing."""

from __future__ import annotations

import pytest

from gangweb.clusterview import reading
from gangweb.clusterview.rows import build_view
from scheduler.simulation import SimulatedCluster, SteppedClock
from tests.scheduler.preemption.builders import node, pod, podgroup

# A PodGroup's state in the rows -> the same gang's state on the map (docs/dashboard.md).
MAP_STATE = {"running": "running", "running-partly": "partial", "pending": "waiting", "short": "waiting"}


class Listed:
    """A cluster that hands its objects as they are."""

    name = "listed"

    def __init__(self, objects):
        self.objects = objects

    def snapshot_objects(self):
        return self.objects


def disputed_cluster():
    """Three 8-GPU nodes and every case the two readers once told apart."""
    objects = [node(f"node-{i}") for i in range(3)]
    # A running gang whose third member is being deleted before it was ever placed: the map said it
    # waited ("partial"), the API that it ran.
    objects.append(podgroup("team-a", "trainer", min_count=2, priority=100))
    objects += [
        pod("team-a", f"trainer-{i}", group="trainer", priority=100, gpus=2, node_name="node-0")
        for i in (0, 1)
    ]
    leaving = pod("team-a", "trainer-2", group="trainer", priority=100, gpus=2)
    leaving["metadata"]["deletionTimestamp"] = "2026-07-01T12:00:00Z"
    objects.append(leaving)
    done = pod("team-a", "trainer-old", group="trainer", priority=100, gpus=2, node_name="node-1")
    done["status"]["phase"] = "Succeeded"
    objects.append(done)
    # A basic PodGroup (no gang: its pods are placed one by one), one member placed, one waiting: the map
    # took its pod count for minCount ("waiting"), the API 1 ("running-partly").
    sweep = podgroup("team-a", "sweep", min_count=1, priority=50)
    sweep["spec"]["schedulingPolicy"] = {"basic": {}}
    objects.append(sweep)
    objects += [
        pod("team-a", "sweep-0", group="sweep", priority=50, gpus=1, node_name="node-1"),
        pod("team-a", "sweep-1", group="sweep", priority=50, gpus=1),
    ]
    # Lone GPU pods, placed and pending, and a pod asking for no GPU.
    objects.append(pod("team-b", "notebook", group=None, priority=10, gpus=2, node_name="node-2"))
    objects.append(pod("team-b", "probe", group=None, priority=10, gpus=1))
    objects.append(pod("team-b", "sidecar", group=None, priority=10, gpus=0, node_name="node-2"))
    return objects


def agree(taken):
    """Assert the picture and the rows of one reading say the same of every gang and every node."""
    view = build_view(taken)
    gangs = {g["key"]: g for g in taken.picture["gangs"]}
    for key, row in view.groups.items():
        if not row["pods"]:
            assert key not in gangs  # a PodGroup without pods draws nothing
            continue
        gang = gangs[key]
        if row["state"] == "broken":
            assert gang.get("broken") == row["broken"]
        else:
            assert MAP_STATE[row["state"]] == gang["state"], key
        assert (row["pods"], row["placedPods"], row["minCount"], row["gpus"]) == (
            gang["pods"],
            gang["placed"],
            gang["minCount"],
            gang["gpus"],
        ), key
        assert row["waitingSeconds"] == gang["waitingSeconds"], key
    drawn = {n["name"]: n for n in taken.picture["nodes"]}
    for row in view.nodes:
        squares: dict[tuple[str, str], int] = {}
        for owner in drawn[row["name"]]["gpus"]:
            if owner is not None:
                gang = taken.picture["gangs"][owner]
                squares[(gang["namespace"], gang["name"])] = (
                    squares.get((gang["namespace"], gang["name"]), 0) + 1
                )
        assert {(a["namespace"], a["name"]): a["gpus"] for a in row["allocations"]} == squares, row["name"]
    return view, gangs


def test_the_map_and_the_rows_agree_where_they_once_disagreed():
    taken = reading.take(Listed(disputed_cluster()), max_age=0)
    try:
        view, gangs = agree(taken)
    finally:
        reading.forget()
    # A member being deleted before it was placed waits for nothing, in both.
    assert (
        gangs["team-a/trainer"]["state"] == "running" and view.groups["team-a/trainer"]["state"] == "running"
    )
    assert (
        view.groups["team-a/trainer"]["pendingPods"] == 0 and gangs["team-a/trainer"]["waitingSeconds"] == 0
    )
    # A basic PodGroup needs one member placed, in both.
    assert (gangs["team-a/sweep"]["state"], gangs["team-a/sweep"]["minCount"]) == ("partial", 1)
    assert view.groups["team-a/sweep"]["state"] == "running-partly"
    # A lone GPU pod is a gang of its own named by the pod: a gang on the map, its node's allocation in the
    # rows, no PodGroup row; one asking for no GPU is in neither.
    assert gangs["team-b/notebook"]["podGroup"] is False and gangs["team-b/probe"]["state"] == "waiting"
    node_2 = next(n for n in view.nodes if n["name"] == "node-2")
    assert node_2["allocations"] == [
        {"namespace": "team-b", "name": "notebook", "gpus": 2, "otherNamespace": False}
    ]
    assert not {"team-b/notebook", "team-b/probe", "team-b/sidecar"} & (set(view.groups) | set(view.members))
    assert "team-b/sidecar" not in gangs


@pytest.mark.parametrize("ticks", [0, 40])
def test_the_map_and_the_rows_of_a_simulated_cluster_agree(ticks):
    """The simulation hands the map its device holders; the rows count pods: the same squares."""
    cluster = SimulatedCluster(nodes=24, seed=3, clock=SteppedClock())
    for _ in range(ticks):
        cluster.tick()
    taken = reading.take(cluster, max_age=0)
    try:
        agree(taken)
    finally:
        reading.forget()
