"""A gang's CompositePodGroup tree on its page's API (KEP-6012): the top ancestor down to every PodGroup
under it, the highest ``all`` ancestor marked as the victim unit, nothing of another namespace."""

from __future__ import annotations

import pytest

from gangweb.dashboard import live
from scheduler.engine.builders import podgroup as group
from scheduler.preemption import runtime
from tests.scheduler.preemption.builders import FakeCluster, node, pod, podgroup

pytestmark = pytest.mark.django_db(transaction=True)


def composite(
    namespace: str, name: str, *, mode: str, parent: str | None = None, min_groups: int = 2
) -> dict:
    return group(
        name, namespace=namespace, kind="CompositePodGroup", mode=mode, parent=parent, min_count=min_groups
    )


@pytest.fixture
def trees():
    """team-a: job (all) > slice-0 (single) > {train, train-b}, job > slice-1; team-b: job > other."""
    objects = [node(f"node-{i}") for i in range(2)]
    objects += [
        composite("team-a", "job", mode="all"),
        composite("team-a", "slice-0", mode="single", parent="job"),
        composite("team-a", "slice-1", mode="single", parent="job", min_groups=1),
        group("train", namespace="team-a", parent="slice-0", min_count=1, priority=100),
        group("train-b", namespace="team-a", parent="slice-0", min_count=1, priority=100),
        podgroup("team-a", "alone", min_count=1, priority=100),
        composite("team-b", "job", mode="all"),
        group("other", namespace="team-b", parent="job", min_count=1, priority=100),
    ]
    objects += [pod("team-a", "train-0", group="train", priority=100, node_name="node-0")]
    objects += [pod("team-a", "alone-0", group="alone", priority=100, node_name="node-1")]
    runtime.set_cluster(FakeCluster(objects))
    live.reset()
    yield
    runtime.reset_cluster()
    live.reset()


def test_the_gang_page_gets_its_tree_with_the_victim_unit(client, admin, trees):
    tree = client.get("/api/v1/podgroups/team-a/train/", **admin).json()["compositeTree"]

    def shape(n):
        return (n["kind"], n["name"], n["disruptionMode"], n["minCount"], n["gang"], n["victimUnit"]), [
            shape(c) for c in n["children"]
        ]

    assert shape(tree) == (
        ("CompositePodGroup", "job", "all", 2, False, True),
        [
            (
                ("CompositePodGroup", "slice-0", "single", 2, False, False),
                [
                    (("PodGroup", "train", "single", 1, True, False), []),
                    (("PodGroup", "train-b", "single", 1, False, False), []),
                ],
            ),
            (("CompositePodGroup", "slice-1", "single", 1, False, False), []),
        ],
    )
    assert "other" not in str(tree), "team-b's tree of the same name is another namespace's"
    assert client.get("/api/v1/podgroups/team-a/alone/", **admin).json()["compositeTree"] is None
