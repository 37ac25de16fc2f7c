"""A broken gang as the reader sees it: the state ``broken`` on the gangs list and the gang's row, counted on
the overview and the map, hatched on the map; cut to the reader's namespaces like every figure."""

from __future__ import annotations

import pytest

from gangweb.dashboard import live
from scheduler.preemption import runtime
from tests.scheduler.preemption.builders import FakeCluster, node, pod, podgroup

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broken_world():
    """team-a/train lost one of its 4 members and holds 24 GPUs; team-b/solid runs whole; team-b/lame
    crash-loops on one of its 2 members."""
    objects = [node(f"node-{i}") for i in range(6)]
    objects += [podgroup("team-a", "train", min_count=4, priority=100)]
    objects += [
        pod("team-a", f"train-{i}", group="train", priority=100, node_name=f"node-{i}") for i in range(3)
    ]
    objects += [podgroup("team-b", "solid", min_count=1, priority=100)]
    objects += [pod("team-b", "solid-0", group="solid", priority=100, node_name="node-3")]
    objects += [podgroup("team-b", "lame", min_count=2, priority=100)]
    lame = [
        pod("team-b", f"lame-{i}", group="lame", priority=100, node_name=f"node-{4 + i}") for i in range(2)
    ]
    lame[1]["status"]["containerStatuses"] = [
        {"name": "main", "restartCount": 7, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    ]
    runtime.set_cluster(FakeCluster(objects + lame))
    live.reset()
    yield
    runtime.reset_cluster()
    live.reset()


def test_a_broken_gang_is_a_state_on_the_list_and_its_row_with_the_gpus_it_holds(client, admin, broken_world):
    rows = {r["podGroup"]: r for r in client.get("/api/v1/podgroups/", **admin).json()["results"]}
    assert rows["team-a/train"]["state"] == "broken"
    assert rows["team-a/train"]["broken"] == {
        "state": "broken",
        "minCount": 4,
        "running": 3,
        "heldGpus": 24,
        "causes": ["member-lost"],
        "restarting": False,
        "composite": "",
    }
    assert rows["team-a/train"]["reason"].startswith("broken: 3 of 4 members run")
    assert rows["team-b/lame"]["broken"]["causes"] == ["crash-looping"]
    assert rows["team-b/solid"]["state"] == "running" and rows["team-b/solid"]["broken"] is None
    only = client.get("/api/v1/podgroups/?state=broken", **admin).json()["results"]
    assert [r["podGroup"] for r in only] == ["team-a/train", "team-b/lame"]

    detail = client.get("/api/v1/podgroups/team-a/train/", **admin).json()
    assert detail["state"] == "broken" and detail["broken"]["heldGpus"] == 24


def test_the_overview_and_the_map_count_the_readers_broken_gangs_only(client, admin, a_viewer, broken_world):
    everything = client.get("/api/v1/overview/", **admin).json()["totals"]
    assert (everything["brokenGangs"], everything["brokenGpus"]) == (2, 40)
    mine = client.get("/api/v1/overview/", **a_viewer).json()["totals"]
    assert (mine["brokenGangs"], mine["brokenGpus"]) == (1, 24)
    gangs = client.get("/api/v1/map/", **a_viewer).json()["gangs"]
    assert [g["key"] for g in gangs if g.get("broken")] == ["team-a/train"]
    assert "team-b" not in str([g for g in gangs if g.get("broken")])


@pytest.fixture
def short_composite():
    """team-a/serve (minGroupCount 2) over replica-0, which lost one of its 2 members, and replica-1, whole."""
    objects = [node(f"node-{i}") for i in range(4)]
    objects.append(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha3",
            "kind": "CompositePodGroup",
            "metadata": {"name": "serve", "namespace": "team-a"},
            "spec": {"schedulingPolicy": {"gang": {"minGroupCount": 2}}, "disruptionMode": {"single": {}}},
        }
    )
    for r, members in ((0, 1), (1, 2)):
        group = podgroup("team-a", f"replica-{r}", min_count=2, priority=100)
        group["spec"]["parentCompositePodGroupName"] = "serve"
        objects.append(group)
        objects += [
            pod(
                "team-a",
                f"replica-{r}-{i}",
                group=f"replica-{r}",
                priority=100,
                node_name=f"node-{2 * r + i}",
            )
            for i in range(members)
        ]
    runtime.set_cluster(FakeCluster(objects))
    live.reset()
    yield
    runtime.reset_cluster()
    live.reset()


def test_a_whole_gang_under_a_composite_short_of_groups_is_broken_and_says_which(
    client, admin, short_composite
):
    rows = {r["podGroup"]: r for r in client.get("/api/v1/podgroups/", **admin).json()["results"]}
    whole = rows["team-a/replica-1"]
    assert whole["state"] == "broken", whole
    assert whole["broken"]["causes"] == ["composite-short"] and whole["broken"]["composite"] == "team-a/serve"
    assert whole["broken"]["running"] == whole["broken"]["minCount"] == 2
    assert "CompositePodGroup team-a/serve runs fewer child groups than its minGroupCount" in whole["reason"]
    assert rows["team-a/replica-0"]["broken"]["causes"] == ["member-lost", "composite-short"]
