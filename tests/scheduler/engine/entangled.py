"""A synthetic cluster whose victims reach far beyond one rack (shared by the engine's tests)."""

from __future__ import annotations

from scheduler.engine.builders import pdb, podgroup
from testkit.synthetic import NAMESPACE, synthetic_cluster


def entangled_cluster(nodes: int, seed: int) -> list[dict]:
    """The benchmark's cluster, plus victims that reach far beyond one rack: CompositePodGroups
    (``all`` trees, one under a ``single`` root) gathering PodGroups from everywhere, and
    PodDisruptionBudgets shared across many jobs."""
    objects = synthetic_cluster(nodes, seed=seed)
    groups = [
        o for o in objects if o["kind"] == "PodGroup" and not o["metadata"]["name"].startswith("preemptor")
    ]
    for position, group in enumerate(groups):
        if position % 7 == 0:
            group["spec"]["parentCompositePodGroupName"] = f"tree-{position % 3}"
    objects += [
        podgroup("forest", namespace=NAMESPACE, priority=100, mode="single", kind="CompositePodGroup"),
        podgroup(
            "tree-0", namespace=NAMESPACE, priority=100, mode="all", parent="forest", kind="CompositePodGroup"
        ),
        podgroup("tree-1", namespace=NAMESPACE, priority=200, mode="all", kind="CompositePodGroup"),
        podgroup("tree-2", namespace=NAMESPACE, priority=100, mode="single", kind="CompositePodGroup"),
    ]
    for position, obj in enumerate(o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")):
        obj["metadata"]["labels"]["team"] = f"team-{position % 5}"
    objects += [
        pdb(f"team-{t}", namespace=NAMESPACE, match_labels={"team": f"team-{t}"}, allowed=3 + t)
        for t in range(5)
    ]
    return objects
