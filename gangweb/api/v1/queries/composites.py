"""A gang's CompositePodGroup tree (KEP-6012), for its page: the top ancestor down to every PodGroup under it,
and which node is the victim unit (the highest ``disruptionMode: all`` ancestor, as the engine preempts it:
``scheduler/engine/victims.py``).

A parent is named by ``parentCompositePodGroupName`` in the same namespace, so the tree of a gang the reader
sees holds nothing of another namespace.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler.engine.snapshot import MAX_TREE_DEPTH
from scheduler.engine.typed_objects import ALL, Group


def _groups(objects: Iterable[dict[str, Any]], namespace: str) -> dict[tuple[str, str], Group]:
    out = {}
    for obj in objects:
        kind = obj.get("kind")
        if kind not in ("PodGroup", "CompositePodGroup") or not str(obj.get("apiVersion", "")).startswith(
            "scheduling.k8s.io/"
        ):
            continue
        if (obj.get("metadata") or {}).get("namespace") != namespace:
            continue
        try:
            group = Group(obj, kind)
        except ValueError:
            continue
        out[(kind, group.name)] = group
    return out


def composite_tree(objects: Iterable[dict[str, Any]], namespace: str, name: str) -> dict[str, Any] | None:
    """The tree above and around PodGroup ``namespace/name``; None when it has no parent."""
    groups = _groups(objects, namespace)
    gang = groups.get(("PodGroup", name))
    if gang is None or not gang.parent:
        return None
    chain, seen = [gang], {("PodGroup", name)}
    while chain[-1].parent and len(chain) <= MAX_TREE_DEPTH:
        parent = groups.get(("CompositePodGroup", chain[-1].parent))
        if parent is None or ("CompositePodGroup", parent.name) in seen:
            break
        chain.append(parent)
        seen.add(("CompositePodGroup", parent.name))
    if len(chain) == 1:
        return None  # the parent is not in the cluster (yet)
    unit = next((g for g in reversed(chain) if g.disruption == ALL), None)
    children: dict[str, list[Group]] = {}
    for (_, _), group in sorted(groups.items()):
        if group.parent:
            children.setdefault(group.parent, []).append(group)

    def node(group: Group, depth: int) -> dict[str, Any]:
        below = children.get(group.name, []) if group.kind == "CompositePodGroup" else []
        return {
            "kind": group.kind,
            "name": group.name,
            "disruptionMode": group.disruption,
            "minCount": group.min_count,
            "gang": group is gang,
            "victimUnit": group is unit,
            "children": [node(c, depth + 1) for c in below] if depth < MAX_TREE_DEPTH else [],
        }

    return node(chain[-1], 0)
