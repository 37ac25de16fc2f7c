"""Gang health: whether a gang that holds GPUs still runs enough members to do its work.

A gang is *broken* when fewer than ``minCount`` of its members run while others hold GPUs: a member
failed, was evicted or deleted by someone else, crash-loops, or sits on a NotReady node. Such a gang
holds its remaining GPUs for nothing until its controller restarts it (docs/idle.md).

``judge`` decides one gang from its PodGroup, its pods and its nodes' readiness; ``HealthWatch`` keeps
the index a watch cache needs to judge only the gangs an event touches (a pod's gang, a node's
residents), so a broken gang is seen as the event arrives, without listing. Plain Python over
API-shaped dicts (the same rules serve the map, the API and the pipeline).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from scheduler import podstate
from scheduler.engine.gangkey import GangKey, gang_key_of
from scheduler.engine.resources import pod_gpus
from scheduler.engine.typed_objects import ALL, disruption_mode

HEALTHY, BROKEN = "healthy", "broken"
# Why a member does not count as running (the words of the ledger entry, the API and the page).
FAILED = "member-failed"
LOST = "member-lost"  # deleted or evicted, no replacement bound
CRASH_LOOPING = "crash-looping"
NODE_NOT_READY = "node-not-ready"
TERMINATING = "member-terminating"
# The CompositePodGroup above (KEP-6012) runs fewer child groups than its minGroupCount: the gang's own
# members may all run, but the composite's work cannot go on without the groups it lost.
COMPOSITE_SHORT = "composite-short"
CAUSES = (FAILED, LOST, CRASH_LOOPING, NODE_NOT_READY, TERMINATING, COMPOSITE_SHORT)
MAX_TREE_DEPTH = 8  # as the engine's walk up parentCompositePodGroupName (the API allows 4)


@dataclass(frozen=True)
class GangHealth:
    """One gang's health now. ``held_gpus``: GPUs its bound, unfinished members hold; ``running``: members
    that count as running; ``restarting``: a member waits to be bound again (its controller replaced it)."""

    namespace: str
    name: str
    min_count: int
    running: int
    held_gpus: int
    causes: tuple[str, ...] = ()
    restarting: bool = False
    revision: int = 0  # the newest resourceVersion among the objects it was judged from
    # The highest CompositePodGroup above that is short of its minGroupCount ("" when none is).
    composite: str = ""

    @property
    def key(self) -> GangKey:
        return gang_key_of(self.namespace, self.name)

    @property
    def broken(self) -> bool:
        return self.held_gpus > 0 and (self.running < self.min_count or bool(self.composite))

    @property
    def state(self) -> str:
        return BROKEN if self.broken else HEALTHY

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "minCount": self.min_count,
            "running": self.running,
            "heldGpus": self.held_gpus,
            "causes": list(self.causes),
            "restarting": self.restarting,
            "composite": self.composite,
        }


def node_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def min_count(podgroup: dict[str, Any] | None) -> int | None:
    """The gang's ``minCount``; None for a PodGroup without a gang policy (not a gang: never broken)."""
    if not podgroup:
        return None
    spec = podgroup.get("spec") or {}
    gang = (spec.get("schedulingPolicy") or {}).get("gang")
    value = (gang or {}).get("minCount") if gang is not None else spec.get("minCount")
    try:
        count = int(value) if value is not None else 0
    except (TypeError, ValueError):
        return None
    return count if count > 0 else None


def crash_looping(pod: dict[str, Any]) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any(
        ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff" for s in statuses
    )


def health_facts(pod: dict[str, Any]) -> tuple[Any, ...]:
    """What ``judge`` reads of a member pod (its resourceVersion aside): a change to anything else, such as
    a label, leaves its gang's health as it was and is not judged again (most pod events under churn)."""
    status = pod.get("status") or {}
    return (
        podstate.gang_key_of_pod(pod),
        podstate.node_name(pod),
        status.get("phase"),
        podstate.is_terminating(pod),
        crash_looping(pod),
        pod_gpus(pod),
    )


def _revision(obj: dict[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def judge(
    podgroup: dict[str, Any] | None,
    pods: Iterable[dict[str, Any]],
    is_ready: Callable[[str], bool],
    gpus: Callable[[dict[str, Any]], int] = pod_gpus,
) -> GangHealth | None:
    """The health of the gang ``podgroup`` from its member pods (``is_ready(node name)``); None when it
    is not a gang (no PodGroup, or one without ``minCount``). ``gpus`` counts a pod's GPUs (a caller
    that counted them already hands its count in: parsing every pod's requests twice doubled the map's
    build)."""
    count = min_count(podgroup)
    if count is None:
        return None
    meta = (podgroup or {}).get("metadata") or {}
    running = held = bound_live = 0
    causes: set[str] = set()
    restarting = False
    revision = _revision(podgroup or {})
    for pod in pods:
        revision = max(revision, _revision(pod))
        if podstate.is_finished(pod):
            if (pod.get("status") or {}).get("phase") == "Failed":
                causes.add(FAILED)
            continue
        if not podstate.is_bound(pod):
            restarting = restarting or not podstate.is_terminating(pod)
            continue
        held += gpus(pod)
        bound_live += 1
        if podstate.is_terminating(pod):
            causes.add(TERMINATING)
        elif not is_ready(podstate.node_name(pod)):
            causes.add(NODE_NOT_READY)
        elif crash_looping(pod):
            causes.add(CRASH_LOOPING)
        else:
            running += 1
    if bound_live < count and not (causes & {FAILED, TERMINATING}):
        causes.add(LOST)
    health = GangHealth(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        min_count=count,
        running=running,
        held_gpus=held,
        causes=tuple(c for c in CAUSES if c in causes),
        restarting=restarting,
        revision=revision,
    )
    if not health.broken:  # causes name what broke a gang, nothing else
        return GangHealth(health.namespace, health.name, count, running, held, (), restarting, revision)
    return health


def min_group_count(composite: dict[str, Any]) -> int | None:
    """A CompositePodGroup's ``gang.minGroupCount``; None for the basic policy (never short)."""
    gang = ((composite.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    try:
        count = int((gang or {}).get("minGroupCount") or 0)
    except (TypeError, ValueError):
        return None
    return count if count > 0 else None


def _runs(pod: dict[str, Any], is_ready: Callable[[str], bool]) -> bool:
    """Counts as running, by ``judge``'s rules: bound, not finished or terminating, Ready node, no crash loop."""
    return (
        podstate.is_bound(pod)
        and podstate.is_live(pod)
        and is_ready(podstate.node_name(pod))
        and not crash_looping(pod)
    )


def short_composites(
    groups: dict[GangKey, dict[str, Any]],
    composites: dict[str, dict[str, Any]],
    members: dict[GangKey, list[dict[str, Any]]],
    is_ready: Callable[[str], bool],
) -> dict[GangKey, str]:
    """Gang key -> ``ns/name`` of the highest CompositePodGroup above the gang's PodGroup that runs fewer
    satisfied child groups than its ``minGroupCount`` (KEP-6012). A PodGroup is satisfied when ``minCount``
    members run (one, for the basic policy); a composite when ``minGroupCount`` of its children are (one, for
    the basic policy)."""
    children: dict[str, list[str]] = {}
    for kind, table in (("PodGroup", groups), ("CompositePodGroup", composites)):
        for key, obj in table.items():
            parent = (obj.get("spec") or {}).get("parentCompositePodGroupName")
            if parent:
                children.setdefault(f"{key.partition('/')[0]}/{parent}", []).append(f"{kind}:{key}")
    satisfied: dict[str, bool] = {}

    def ok(node: str, depth: int) -> bool:
        if node in satisfied:
            return satisfied[node]
        satisfied[node] = True  # a cycle counts as satisfied: it is the API server's to refuse
        kind, _, key = node.partition(":")
        if kind == "PodGroup":
            running = sum(1 for pod in members.get(GangKey(key), ()) if _runs(pod, is_ready))
            result = running >= (min_count(groups[GangKey(key)]) or 1)
        else:
            below = children.get(key, []) if depth < MAX_TREE_DEPTH else []
            result = sum(1 for child in below if ok(child, depth + 1)) >= (
                min_group_count(composites[key]) or 1
            )
        satisfied[node] = result
        return result

    out: dict[GangKey, str] = {}
    for gang_key, obj in groups.items():
        namespace, current, highest = gang_key.partition("/")[0], obj, ""
        seen: set[str] = {gang_key}  # the gang's PodGroup and the composites above it
        for _ in range(MAX_TREE_DEPTH):
            parent = (current.get("spec") or {}).get("parentCompositePodGroupName")
            above = f"{namespace}/{parent}" if parent else ""
            if not above or above not in composites or above in seen:
                break
            seen.add(above)
            current = composites[above]
            if min_group_count(current) is not None and not ok(f"CompositePodGroup:{above}", 0):
                highest = above
        if highest:
            out[gang_key] = highest
    return out


def judge_all(objects: Iterable[dict[str, Any]]) -> dict[GangKey, GangHealth]:
    """Every gang's health among ``objects`` (a snapshot: Nodes, PodGroups, CompositePodGroups, Pods), by
    gang key; a PodGroup under a CompositePodGroup short of its ``minGroupCount`` is broken while it holds
    GPUs (``COMPOSITE_SHORT``), whatever its own members do."""
    ready: dict[str, bool] = {}
    groups: dict[GangKey, dict[str, Any]] = {}
    composites: dict[str, dict[str, Any]] = {}
    members: dict[GangKey, list[dict[str, Any]]] = {}
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Node":
            ready[str((obj.get("metadata") or {}).get("name"))] = node_ready(obj)
        elif kind == "PodGroup":
            groups[_gang_key(obj.get("metadata") or {})] = obj
        elif kind == "CompositePodGroup":
            meta = obj.get("metadata") or {}
            composites[f"{meta.get('namespace')}/{meta.get('name')}"] = obj
        elif kind == "Pod":
            gang_key = podstate.gang_key_of_pod(obj)
            if gang_key:
                members.setdefault(gang_key, []).append(obj)
    is_ready: Callable[[str], bool] = lambda node: ready.get(node, False)  # noqa: E731
    out = {}
    for gang_key, group in groups.items():
        health = judge(group, members.get(gang_key, ()), is_ready)
        if health is not None:
            out[gang_key] = health
    if composites:
        for gang_key, composite in short_composites(groups, composites, members, is_ready).items():
            out[gang_key] = composite_short(
                out.get(gang_key), groups[gang_key], members.get(gang_key, ()), is_ready, composite
            )
    return out


def _gang_key(meta: dict[str, Any]) -> GangKey:
    """The gang key of a PodGroup from its metadata."""
    return gang_key_of(str(meta.get("namespace")), str(meta.get("name")))


def composite_short(
    health: GangHealth | None,
    group: dict[str, Any],
    pods: Iterable[dict[str, Any]],
    is_ready: Callable[[str], bool],
    composite: str,
) -> GangHealth:
    """``health`` (or a basic group's, first judged as a gang of one) under a short composite."""
    if health is None:
        health = judge({**group, "spec": {**(group.get("spec") or {}), "minCount": 1}}, pods, is_ready)
        assert health is not None
    causes = tuple(c for c in CAUSES if c in health.causes or c == COMPOSITE_SHORT)
    shorted = replace(health, composite=composite, causes=causes)
    return shorted if shorted.broken else replace(health, composite=composite)


def _parent(obj: dict[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("parentCompositePodGroupName") or "")


def _ends_all(obj: dict[str, Any]) -> bool:
    try:
        return disruption_mode(obj.get("spec") or {}) == ALL
    except ValueError:  # the API server's to refuse; the engine takes the group as it parses
        return False


def victim_tree(
    gang_key: GangKey, groups: dict[GangKey, dict[str, Any]], composites: dict[str, dict[str, Any]]
) -> tuple[str, list[GangKey]]:
    """The victim unit that ends gang ``gang_key`` under a short composite, as the engine's
    (``victims.top_all_ancestor``): the highest ``disruptionMode: all`` CompositePodGroup above it and every
    PodGroup of its tree, or (none is ``all``) the PodGroup alone. ``(unit key, gang keys)``; the unit's
    key names a CompositePodGroup exactly when it is not ``gang_key``."""
    namespace = gang_key.partition("/")[0]
    top, current = "", groups[gang_key]
    seen: set[str] = {gang_key}
    for _ in range(MAX_TREE_DEPTH):
        above = f"{namespace}/{_parent(current)}" if _parent(current) else ""
        if not above or above not in composites or above in seen:
            break
        seen.add(above)
        current = composites[above]
        if _ends_all(current):
            top = above
    if not top:
        return gang_key, [gang_key]
    tree = []
    for other, group in groups.items():
        if other.partition("/")[0] != namespace:
            continue
        current, seen = group, {str(other)}
        for _ in range(MAX_TREE_DEPTH):
            above = f"{namespace}/{_parent(current)}" if _parent(current) else ""
            if above == top:
                tree.append(other)
                break
            if not above or above not in composites or above in seen:
                break
            seen.add(above)
            current = composites[above]
    return top, sorted(tree)


Changed = Callable[[GangHealth], None]


class HealthWatch:
    """Gang health kept from watch events: ``on_event(type, resource, obj)`` (the informer listener's
    signature) re-judges the gangs the event touches and calls ``changed(health)`` when a gang turns
    broken or recovers. An event under a CompositePodGroup re-judges every PodGroup of that namespace's
    composite trees (one group's members count for its siblings' ``minGroupCount``). Gangs are first judged when the Pods' first list is complete (its ``RELIST``),
    each broken one then reported once. Thread-safe; cheap per event."""

    def __init__(self, changed: Changed) -> None:
        self._changed = changed
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, Any]] = {}  # ns/name -> pod
        self._members: dict[GangKey, set[str]] = {}  # gang -> pod keys
        self._residents: dict[str, set[str]] = {}  # node -> pod keys
        self._groups: dict[GangKey, dict[str, Any]] = {}
        self._trees: dict[str, set[GangKey]] = {}  # namespace -> its PodGroups under a CompositePodGroup
        self._composites: dict[str, dict[str, dict[str, Any]]] = {}  # namespace -> ns/name -> composite
        self._ready: dict[str, bool] = {}
        self._state: dict[GangKey, GangHealth] = {}
        self._listed = False  # every pod listed once (the Pods reflector's first RELIST, or ``seed``)
        self._deleted: dict[str, int] = {}  # pods deleted before that, and the version of their deletion

    def health(self, gang_key: GangKey) -> GangHealth | None:
        with self._lock:
            return self._state.get(gang_key)

    def broken(self) -> list[GangHealth]:
        with self._lock:
            return sorted((h for h in self._state.values() if h.broken), key=lambda h: h.key)

    def seed(self, objects: Iterable[dict[str, Any]]) -> None:
        """Take in a synced cache's objects (a watch attached after the first list missed its events), then
        judge every gang as after the Pods' first list. An object older than what the events already
        brought, or than its deletion, is left out."""
        with self._lock:
            for obj in objects:
                kind, meta = obj.get("kind"), obj.get("metadata") or {}
                if kind == "Pod":
                    key = f"{meta.get('namespace')}/{meta.get('name')}"
                    known = self._pods.get(key)
                    if _revision(obj) > max(_revision(known or {}), self._deleted.get(key, 0)):
                        self._pod(key, obj, False)
                elif kind == "Node":
                    self._ready.setdefault(str(meta.get("name")), node_ready(obj))
                elif kind == "PodGroup":
                    gang_key = _gang_key(meta)
                    if gang_key not in self._groups:
                        self._group(gang_key, obj)
                elif kind == "CompositePodGroup":
                    table = self._composites.setdefault(str(meta.get("namespace")), {})
                    table.setdefault(f"{meta.get('namespace')}/{meta.get('name')}", obj)
            self._deleted.clear()
            self._listed = True
            changes = self._rejudge_all(set(self._members), 0)
        for health in changes:
            self._changed(health)

    def on_event(self, event_type: str, resource: Any, obj: dict[str, Any] | None) -> None:
        if event_type == "RELIST" and getattr(resource, "kind", "") == "Pod":
            # Gangs are judged once every pod is listed: a gang half listed looks broken.
            with self._lock:
                first, self._listed = not self._listed, True
                changes = self._rejudge_all(set(self._members), 0) if first else []
            for health in changes:
                self._changed(health)
            return
        if not obj:
            return
        kind = obj.get("kind") or getattr(resource, "kind", "")
        meta = obj.get("metadata") or {}
        deleted = event_type == "DELETED"
        with self._lock:
            if kind == "Pod":
                key = f"{meta.get('namespace')}/{meta.get('name')}"
                if deleted and not self._listed:
                    self._deleted[key] = _revision(obj)
                touched = self._pod(key, obj, deleted)
            elif kind == "Node":
                name = str(meta.get("name"))
                was = self._ready.get(name)
                now = False if deleted else node_ready(obj)
                self._ready[name] = now
                if was == now:
                    return
                touched = {
                    g for p in self._residents.get(name, ()) if (g := podstate.gang_key_of_pod(self._pods[p]))
                }
            elif kind == "PodGroup":
                gang_key = _gang_key(meta)
                if deleted:
                    self._group(gang_key, None)
                else:
                    self._group(gang_key, obj)
                touched = {gang_key}
            elif kind == "CompositePodGroup":
                namespace = str(meta.get("namespace"))
                table = self._composites.setdefault(namespace, {})
                if deleted:
                    table.pop(f"{namespace}/{meta.get('name')}", None)
                else:
                    table[f"{namespace}/{meta.get('name')}"] = obj
                touched = set(self._trees.get(namespace, ()))
            else:
                return
            if not self._listed:
                return
            changes = self._rejudge_all(touched, _revision(obj))
        for health in changes:
            self._changed(health)

    def _group(self, gang_key: GangKey, obj: dict[str, Any] | None) -> None:
        """Keep the PodGroup of ``gang_key`` (None: deleted) and the per-namespace index of those under a
        composite."""
        tree = self._trees.setdefault(gang_key.partition("/")[0], set())
        if obj is None:
            self._groups.pop(gang_key, None)
            tree.discard(gang_key)
            return
        self._groups[gang_key] = obj
        if _parent(obj):
            tree.add(gang_key)
        else:
            tree.discard(gang_key)

    def _pod(self, key: str, obj: dict[str, Any], deleted: bool) -> set[GangKey]:
        """Keep pod ``key`` (``namespace/name``); the gangs it left or joined."""
        touched = set()
        old = self._pods.pop(key, None)
        if old is not None and not deleted and health_facts(old) == health_facts(obj):
            self._pods[key] = obj  # labels, annotations, conditions: its gang's health as it was
            return touched
        if old is not None:
            gang, node = podstate.gang_key_of_pod(old), podstate.node_name(old)
            if gang:
                self._members.get(gang, set()).discard(key)
                touched.add(gang)
            if node:
                self._residents.get(node, set()).discard(key)
        if not deleted:
            self._pods[key] = obj
            gang, node = podstate.gang_key_of_pod(obj), podstate.node_name(obj)
            if gang:
                self._members.setdefault(gang, set()).add(key)
                touched.add(gang)
            if node:
                self._residents.setdefault(node, set()).add(key)
        return touched

    def _is_ready(self, node: str) -> bool:
        """A node not seen yet counts as ready (the Nodes may be listed after the Pods); a deleted one is not."""
        return self._ready.get(node, True)

    def _rejudge_all(self, touched: set[GangKey], version: int) -> list[GangHealth]:
        """``_rejudge`` of each touched gang and, in a namespace with CompositePodGroups, of every PodGroup
        under one: each judged against the composites short of ``minGroupCount`` now."""
        short: dict[GangKey, str] = {}
        for namespace in {k.partition("/")[0] for k in touched}:
            composites = self._composites.get(namespace)
            if not composites:
                continue
            tree = self._trees.get(namespace, set())
            groups = {k: self._groups[k] for k in tree}
            touched = touched | tree
            members = {k: [self._pods[p] for p in self._members.get(k, ())] for k in tree}
            short.update(short_composites(groups, composites, members, self._is_ready))
        return [
            h
            for gang_key in sorted(touched)
            if (h := self._rejudge(gang_key, version, short.get(gang_key, "")))
        ]

    def _rejudge(self, gang_key: GangKey, version: int, composite: str = "") -> GangHealth | None:
        """The gang's new health when its state changed (None otherwise), judged at ``version`` (the
        event's: a deleted pod's is newer than every object left), under ``composite`` when that one is
        short of its ``minGroupCount``."""
        pods = [self._pods[p] for p in self._members.get(gang_key, ())]
        group = self._groups.get(gang_key)
        health = judge(group, pods, self._is_ready)
        if group is not None and composite:
            health = composite_short(health, group, pods, self._is_ready, composite)
        before = self._state.get(gang_key)
        if health is None:
            self._state.pop(gang_key, None)
            if before is None or not before.broken:
                return None
            namespace, _, name = gang_key.partition("/")  # a broken gang gone: it holds nothing any more
            return GangHealth(namespace, name, before.min_count, 0, 0, revision=max(before.revision, version))
        health = replace(health, revision=max(health.revision, version))
        self._state[gang_key] = health
        if (before.state if before else HEALTHY) != health.state:
            return health
        return None
