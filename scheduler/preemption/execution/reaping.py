"""The re-check of a reap (``scheduler/preemption/reaper.py``): is the gang still broken, and is each
member to evict still the pod the plan named? Read as a preemption's re-check reads: the PodGroup and
the members by name afresh (with a watch cache, the rest of the gang and the nodes' readiness from the
cache once it holds those reads), else one fresh snapshot.

A reap that no longer holds is never planned again from here: the gang recovered, or it changed, and
the reaper's next pass judges it anew (a refusal is ``moot``).
"""

from __future__ import annotations

from typing import Any

from scheduler import health, podstate
from scheduler.cluster import ClusterError, KubeObject, WatchCache, current_objects, object_key
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
    ready = {
        str((o.get("metadata") or {}).get("name")): health.node_ready(o)
        for o in cached
        if o.get("kind") == "Node"
    }
    others = [
        o
        for o in cached
        if o.get("kind") == "Pod" and podstate.group_key(o) == request.podgroup and object_key(o) not in pods
    ]
    return judge(request.podgroup, podgroup, pods, others, rows, lambda n: ready.get(n, False)), objects


def judge(
    key: str,
    podgroup: KubeObject | None,
    pods: dict[str, KubeObject | None],
    others: list[KubeObject],
    rows: list[Any],
    is_ready: Any,
) -> Verdict:
    if podgroup is None:
        return Verdict(False, f"PodGroup {key} no longer exists", moot=True)
    for row in rows:
        current = pods.get(row.pod)
        if current is None:
            return Verdict(False, f"member {row.pod} is gone since the reap was planned", moot=True)
        meta = current.get("metadata") or {}
        if row.pod_uid and meta.get("uid") and meta.get("uid") != row.pod_uid:
            return Verdict(False, f"member {row.pod} was replaced by a new pod (UID changed)", moot=True)
        if meta.get("deletionTimestamp"):
            return Verdict(False, f"member {row.pod} is already terminating", moot=True)
    judged = health.judge(podgroup, [p for p in pods.values() if p is not None] + others, is_ready)
    if judged is None or not judged.broken:
        return Verdict(False, f"{key} is not broken any more", moot=True)
    return Verdict(True, f"{key} is still broken on fresh reads ({', '.join(judged.causes)})")
