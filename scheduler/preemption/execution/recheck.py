"""Is a stored plan still right? Checked against fresh reads just before anything is evicted.

With a watch cache (``scheduler.cluster.WatchCache``) only what must be exact is read afresh, by name:
the preemptor PodGroup, the victims and the planned preemptor pods (GETs, consistent reads), and the
budgets of the victims' namespaces; the engine's check then runs on the live snapshot once the cache has
reached those reads' resourceVersions. Without one, on a whole fresh snapshot.

A plan is only as good as the snapshot it was made from. Before the first eviction we ask again:
the preemptor still has pending pods, every victim pod is still the same pod (UID) on the same node,
not already terminating, and still of strictly lower priority than the preemptor; and, with the
victims removed, the engine places the gang without evicting anyone else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler import podstate
from scheduler.cluster import KubeObject, object_key, split_key
from scheduler.engine import parse_snapshot
from scheduler.engine import plan as engine_plan
from scheduler.kinds import is_native

if TYPE_CHECKING:
    from scheduler.engine.caching.live import LiveSnapshot

PODGROUP_API_VERSION = "scheduling.k8s.io/v1beta1"

# Any timestamp does: the engine only asks whether a pod is terminating.
EVICTED_AT = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    # True when the gang no longer needs preemption at all (placed meanwhile, or deleted).
    moot: bool = False


def pending_pods(objects: Iterable[KubeObject], namespace: str, podgroup: str) -> list[KubeObject]:
    """Pods of the group without a node that are not terminating or finished."""
    return podstate.pending_of(objects, namespace, podgroup)


def as_if_evicted(objects: list[KubeObject], victim_keys: set[str]) -> list[KubeObject]:
    """The objects with the victims terminating: they hold nothing, but the engine still knows them
    (and their priorities), so one parse serves both checks."""
    out = []
    for obj in objects:
        if is_native(obj, "Pod") and object_key(obj) in victim_keys:
            obj = {**obj, "metadata": {**(obj.get("metadata") or {}), "deletionTimestamp": EVICTED_AT}}
        out.append(obj)
    return out


def recheck(objects: list[KubeObject], stored_plan: Any, evictions: list[Any]) -> Verdict:
    """The re-check on a whole fresh snapshot (clusters without a watch cache)."""
    request = stored_plan.request
    pods = {object_key(o): o for o in objects if is_native(o, "Pod")}
    groups = {object_key(o) for o in objects if is_native(o, "PodGroup")}
    pending = bool(pending_pods(objects, request.namespace, request.name))
    snapshot = lambda: parse_snapshot(as_if_evicted(objects, {e.pod for e in evictions}))  # noqa: E731
    return judge(stored_plan, evictions, request.podgroup in groups, pending, pods, snapshot)


@dataclass(frozen=True)
class FreshReads:
    """What the re-check reads afresh (consistent reads, not the cache): the preemptor PodGroup, the
    victims' and the planned preemptor pods by name, the budgets of the victims' namespaces."""

    podgroup: KubeObject | None
    pods: dict[str, KubeObject | None]
    budgets: list[KubeObject]
    versions: dict[str, str]  # the highest resourceVersion read, per plural

    def objects(self) -> list[KubeObject]:
        return [p for p in self.pods.values() if p is not None] + self.budgets


def read_fresh(cluster: Any, stored_plan: Any, evictions: list[Any], *, budgets: bool) -> FreshReads:
    """GET the PodGroup and each victim and planned preemptor pod, and LIST the budgets of the victims'
    namespaces (when the plan goes through the Eviction API): nothing else is read."""
    request = stored_plan.request
    podgroup = cluster.get_object(PODGROUP_API_VERSION, "PodGroup", request.namespace, request.name)
    keys = sorted({e.pod for e in evictions} | set(stored_plan.placement or {}))
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(keys)))) as pool:
        read = dict(zip(keys, pool.map(lambda key: cluster.get_pod(*split_key(key)), keys), strict=True))
    listed: list[KubeObject] = []
    versions: dict[str, str] = {}
    if budgets:
        for namespace in sorted({e.pod.partition("/")[0] for e in evictions}):
            # The list's own resourceVersion is the store's newest, which the budgets' watch reaches only at
            # their next change or bookmark (which may be a minute away; docs/measurements.md): the cache
            # catches up to the budgets read, as it does to the pods.
            items, _listed_at = cluster.read_fresh("PodDisruptionBudget", namespace)
            listed += items
    for plural, objs in (
        ("pods", read.values()),
        ("podgroups", [podgroup]),
        ("poddisruptionbudgets", listed),
    ):
        for obj in objs:
            if obj is not None:
                version = (obj.get("metadata") or {}).get("resourceVersion") or ""
                versions[plural] = _highest(versions.get(plural, ""), version)
    return FreshReads(podgroup, read, listed, versions)


def _highest(a: str, b: str) -> str:
    if a.isdigit() and b.isdigit():
        return a if int(a) >= int(b) else b
    return b or a


def recheck_reads(
    reads: FreshReads, live: LiveSnapshot, overrides: dict, stored_plan: Any, evictions: list[Any]
) -> Verdict:
    """The re-check on fresh reads, with the engine's check on the watch cache's live snapshot (which has
    reached the reads' resourceVersions): the victims as if evicted, ``overrides`` (reservations) on top.

    The engine's check runs on the plan's nodes only (``LiveSnapshot.local``: the victims' and the placement's
    nodes, the group's own pods, every group and priority class), not on the whole cluster re-indexed: if
    the gang fits there without evicting anyone else, it fits in the cluster (more nodes only add room), and a
    whole re-index of a large cluster costs seconds (docs/measurements.md). A cluster
    with DRA objects is checked on the whole snapshot (devices are shared across nodes)."""
    request = stored_plan.request
    pending = bool(podstate.pending_of(reads.objects(), request.namespace, request.name))

    def snapshot():
        merged = {**overrides, **{("Pod", key): obj for key, obj in _evicted(reads, evictions).items()}}
        nodes = {e.node for e in evictions if e.node} | {
            n for n in (stored_plan.placement or {}).values() if n
        }
        local = live.local(nodes, request.podgroup, merged)
        return local if local is not None else live.snapshot(merged)

    return judge(stored_plan, evictions, reads.podgroup is not None, pending, reads.pods, snapshot)


def _evicted(reads: FreshReads, evictions: list[Any]) -> dict[str, KubeObject]:
    out = {}
    for eviction in evictions:
        obj = reads.pods.get(eviction.pod)
        if obj is not None:
            out[eviction.pod] = {
                **obj,
                "metadata": {**(obj.get("metadata") or {}), "deletionTimestamp": EVICTED_AT},
            }
    return out


def judge(
    stored_plan: Any,
    evictions: list[Any],
    podgroup_exists: bool,
    pending: bool,
    pods: dict[str, KubeObject | None],
    snapshot_after: Callable[[], Any],
) -> Verdict:
    """The verdict, from the current state of the preemptor and each victim pod and the snapshot (built
    only when the cheap checks pass) with the victims evicted."""
    request = stored_plan.request
    if not podgroup_exists:
        return Verdict(False, f"PodGroup {request.podgroup} no longer exists", moot=True)
    if not pending:
        return Verdict(
            False, f"{request.podgroup} has no pending pods any more (placed without preemption)", moot=True
        )

    for eviction in evictions:
        current = pods.get(eviction.pod)
        if current is None:
            return Verdict(False, f"victim {eviction.pod} is gone since the plan was made")
        meta = current.get("metadata") or {}
        if eviction.pod_uid and meta.get("uid") and meta.get("uid") != eviction.pod_uid:
            return Verdict(False, f"victim {eviction.pod} was replaced by a new pod (UID changed)")
        if meta.get("deletionTimestamp"):
            return Verdict(False, f"victim {eviction.pod} is already terminating")
        node = (current.get("spec") or {}).get("nodeName") or ""
        if eviction.node and node != eviction.node:
            return Verdict(False, f"victim {eviction.pod} moved from {eviction.node} to {node or 'no node'}")

    victim_keys = {e.pod for e in evictions}
    snapshot = snapshot_after()
    preemptor_priority = snapshot.effective_group_priority(snapshot.groups[request.podgroup])
    for key in sorted(victim_keys):
        priority = snapshot.pod_priority[snapshot.pod_index[key]]
        if priority >= preemptor_priority:
            return Verdict(
                False,
                f"victim {key} now has priority {priority}, not lower than the "
                f"preemptor's {preemptor_priority}",
            )

    after = engine_plan(snapshot, request.podgroup, policy=stored_plan.policy)
    if not after.feasible:
        return Verdict(False, f"the gang would not fit even after the evictions: {after.reason}")
    extra = sorted(after.to_dict().get("evictions") or [])
    if extra:
        return Verdict(
            False, f"after the planned evictions the gang would still need {len(extra)} more: {extra[:5]}"
        )
    return Verdict(True, "plan still holds on a fresh snapshot")
