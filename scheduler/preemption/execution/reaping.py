"""The re-check of a reap (``scheduler/preemption/reaper.py``): is the gang still broken, and is each
member to evict still the pod the plan named? Read as a preemption's re-check reads: the PodGroup and
the members by name afresh (with a watch cache, the rest of the namespace's gangs and composites and the
nodes' readiness from the cache once it holds those reads), else one fresh snapshot. A reap whose unit is
a CompositePodGroup's tree holds only while a composite above the gang is still short of its
``minGroupCount``.

A reap that no longer holds is never planned again from here: the gang recovered, or it changed, and
the reaper's next pass judges it anew (a refusal is ``moot``).
"""

from __future__ import annotations

from typing import Any

from scheduler import health
from scheduler.cluster import ClusterError, KubeObject, WatchCache, current_objects, object_key
from scheduler.engine.gangkey import GangKey
from scheduler.preemption.execution.recheck import Verdict, read_fresh
from scheduler.preemption.planning import fresh_objects

REAP = "reap"  # the policy of a reap's request and plan (scheduler/preemption/reaper.py)


def recheck(cluster: Any, plan: Any, rows: list[Any], *, budgets: bool) -> tuple[Verdict, list[KubeObject]]:
    """The verdict and the objects the budgets are then held against (the members and their budgets)."""
    request = plan.request
    if isinstance(cluster, WatchCache):
        reads = read_fresh(cluster, plan, rows, budgets=budgets)
        if not cluster.wait_for_versions(reads.versions, timeout=30.0):
            raise ClusterError(f"the watch cache did not reach {reads.versions} in 30 s")
        cached = current_objects(cluster)
        podgroup, pods, objects = reads.podgroup, reads.pods, reads.objects()
    else:
        cached = objects = fresh_objects(cluster)
        podgroup = next(
            (o for o in objects if o.get("kind") == "PodGroup" and object_key(o) == request.podgroup), None
        )
        pods = {
            r.pod: next((o for o in objects if o.get("kind") == "Pod" and object_key(o) == r.pod), None)
            for r in rows
        }
    namespace = request.podgroup.partition("/")[0]
    fresh = {("Pod", key): pod for key, pod in pods.items()}
    fresh[("PodGroup", request.podgroup)] = podgroup
    scope = [
        o
        for o in cached
        if o.get("kind") == "Node"
        or (
            (o.get("metadata") or {}).get("namespace") == namespace
            and (o.get("kind"), object_key(o)) not in fresh
        )
    ]
    scope += [{**o, "kind": kind} for (kind, _), o in fresh.items() if o is not None]
    return judge(request.podgroup, podgroup, pods, scope, rows, _unit_kind(plan)), objects


def _unit_kind(plan: Any) -> str:
    victims = getattr(plan, "victims", None) or [{}]
    return str(victims[0].get("kind") or "PodGroup")


def judge(
    gang_key: GangKey,
    podgroup: KubeObject | None,
    pods: dict[str, KubeObject | None],
    scope: list[KubeObject],
    rows: list[Any],
    unit_kind: str = "PodGroup",
) -> Verdict:
    """``scope``: the Nodes and the namespace's objects as they are now (the fresh reads among them)."""
    if podgroup is None:
        return Verdict(False, f"PodGroup {gang_key} no longer exists", moot=True)
    for row in rows:
        current = pods.get(row.pod)
        if current is None:
            return Verdict(False, f"member {row.pod} is gone since the reap was planned", moot=True)
        meta = current.get("metadata") or {}
        if row.pod_uid and meta.get("uid") and meta.get("uid") != row.pod_uid:
            return Verdict(False, f"member {row.pod} was replaced by a new pod (UID changed)", moot=True)
        if meta.get("deletionTimestamp"):
            return Verdict(False, f"member {row.pod} is already terminating", moot=True)
    judged = health.judge_all(scope).get(gang_key)
    if judged is None or not judged.broken:
        return Verdict(False, f"{gang_key} is not broken any more", moot=True)
    if unit_kind == "CompositePodGroup" and not judged.composite:
        return Verdict(False, f"{gang_key}'s composite is not short of its minGroupCount any more", moot=True)
    return Verdict(True, f"{gang_key} is still broken on fresh reads ({', '.join(judged.causes)})")
