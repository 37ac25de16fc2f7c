"""The reaper: what is left of a broken gang, evicted as one unit so its controller can restart it whole.

Chosen per namespace like the modes (``runtime.reaper_for``): ``report`` (the default) only records
broken gangs; ``evict`` ends one that has stayed broken for ``GANGWEB_REAP_GRACE_SECONDS``. A reap is a
preemption request of the broken gang itself (policy ``reap``) whose plan's one victim unit is the gang's
bound pods: it goes through the same ledger and execution path as a preemption (the namespace's mode,
approve mode's wait, the re-check on fresh reads, every disruption budget, dry runs, evictions by UID,
the recovery of a crashed worker). Never while a member is being restarted within the grace period, and
never for a gang a queue manager owns (it handles broken gangs itself): there it reports.

A gang broken because the CompositePodGroup above it runs fewer groups than its ``minGroupCount``
(``health.COMPOSITE_SHORT``) is reaped as the engine preempts a composite: its victim unit is the highest
``disruptionMode: all`` composite above and every bound pod of that tree (``health.victim_tree``), one
request for the whole tree; below no ``all`` composite, the gang alone.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from scheduler import health, podstate
from scheduler.cluster import KubeObject, object_key
from scheduler.engine.resources import pod_gpus
from scheduler.engine.typed_objects import timestamp_or_none
from scheduler.preemption import ledger
from scheduler.preemption.execution.reaping import REAP
from scheduler.preemption.facts import VictimFacts
from scheduler.preemption.ledger import health as recorded
from scheduler.preemption.models import BrokenGang, RequestState
from scheduler.preemption.planning import PlanResult
from scheduler.preemption.runtime import mode_for, reaper_for

logger = logging.getLogger(__name__)

EVICT = "evict"


def queue_manager_of(podgroup: KubeObject | None, pods: list[KubeObject]) -> str | None:
    """The queue manager that owns this gang and handles its broken members itself (Kueue's
    ``waitForPodsReady``, KAI's stale-gang eviction), or None. Recognised by the marks those managers put
    on the objects they own: Kueue's queue label or a Kueue owner reference, KAI's scheduler name or
    queue label. A stand-in until gangweb keeps a registry of queue ownership; callers ask only this."""
    for obj in [podgroup or {}, *pods]:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        owners = meta.get("ownerReferences") or []
        if "kueue.x-k8s.io/queue-name" in labels or any(
            str(o.get("apiVersion", "")).startswith("kueue.x-k8s.io/") for o in owners
        ):
            return "Kueue"
        if (obj.get("spec") or {}).get("schedulerName") == "kai-scheduler" or "kai.scheduler/queue" in labels:
            return "KAI"
    return None


def _restarting_within_grace(pods: list[KubeObject], now: float, grace: float) -> bool:
    """A member waits to be bound again and was created less than ``grace`` ago: its controller is on it."""
    for pod in pods:
        if podstate.is_pending(pod):
            created = timestamp_or_none((pod.get("metadata") or {}).get("creationTimestamp"))
            if created is None or now - created < grace:
                return True
    return False


def plan_of(
    podgroup: KubeObject, pods: list[KubeObject], unit: KubeObject | None = None
) -> tuple[dict[str, Any], dict[str, VictimFacts]]:
    """The reap's plan (``gang plan`` JSON): one victim unit, the gang's bound unfinished pods, or those of
    the tree of ``unit`` (the CompositePodGroup that ends with it; ``pods`` then the whole tree's)."""
    key = object_key(podgroup)
    unit = unit or podgroup
    meta = unit.get("metadata") or {}
    victims = sorted(
        (p for p in pods if podstate.is_bound(p) and not podstate.is_finished(p)),
        key=object_key,
    )
    facts = {
        object_key(p): VictimFacts(
            uid=str((p.get("metadata") or {}).get("uid") or ""),
            node=podstate.node_name(p),
            gpus=pod_gpus(p),
        )
        for p in victims
    }
    evictions = sorted(facts)
    plan = {
        "podGroup": key,
        "policy": REAP,
        "feasible": bool(evictions),
        "victims": [
            {
                "kind": unit.get("kind") or "PodGroup",
                "namespace": meta.get("namespace"),
                "name": meta.get("name"),
                "priority": (unit.get("spec") or {}).get("priority")
                or (podgroup.get("spec") or {}).get("priority")
                or 0,
                "pods": evictions,
            }
        ]
        if evictions
        else [],
        "evictions": evictions,
        "placement": {},
        "domain": None,
        "reason": f"reap the broken gang {key}: evict its {len(evictions)} bound pods as one unit"
        if unit is podgroup
        else f"reap the broken gang {key}: evict the {len(evictions)} bound pods of {unit.get('kind')} "
        f"{object_key(unit)}, short of its minGroupCount, as one unit",
        "outcome": REAP,
        "optimality": None,
    }
    return plan, facts


def _active_or_done(episode: BrokenGang) -> bool:
    request = episode.reaped_by
    return request is not None and (request.is_active or request.state == RequestState.SUCCEEDED)


def sweep(objects: list[KubeObject], *, now: float | None = None) -> list[int]:
    """Open a reap for each gang broken past the grace period in an ``evict`` namespace; the request ids."""
    now = timezone.now().timestamp() if now is None else now
    grace = float(settings.GANGWEB_REAP_GRACE_SECONDS)
    due = [
        e
        for e in recorded.open_episodes()
        if reaper_for(e.namespace) == EVICT and e.since <= timezone.now() - timedelta(seconds=grace)
    ]
    if not due:
        return []
    namespaces = {e.namespace for e in due}
    objects = [
        o
        for o in objects
        if o.get("kind") == "Node" or (o.get("metadata") or {}).get("namespace") in namespaces
    ]
    judged = health.judge_all(objects)  # with the composites above each gang
    groups = {object_key(o): o for o in objects if o.get("kind") == "PodGroup"}
    composites = {object_key(o): o for o in objects if o.get("kind") == "CompositePodGroup"}
    members: dict[str, list[KubeObject]] = {}
    for obj in objects:
        if obj.get("kind") == "Pod" and (key := podstate.gang_key_of_pod(obj)):
            members.setdefault(key, []).append(obj)
    opened, covered = [], set()
    for episode in due:
        key = episode.podgroup
        group, now_judged = groups.get(key), judged.get(key)
        if group is None or now_judged is None or not now_judged.broken or _active_or_done(episode):
            continue
        unit, tree = health.victim_tree(key, groups, composites) if now_judged.composite else (key, [key])
        if covered & set(tree):
            continue  # this pass already reaps its tree
        pods = [p for k in tree for p in members.get(k, [])]
        owner = queue_manager_of(group, pods)
        if owner is not None:
            logger.info("broken gang %s belongs to %s, which handles it: reported, not reaped", key, owner)
            continue
        if _restarting_within_grace(pods, now, grace):
            continue
        request_id = open_reap(episode, group, pods, composites.get(unit), tree)
        if request_id is not None:
            opened.append(request_id)
            covered.update(tree)
    return opened


def open_reap(
    episode: BrokenGang,
    podgroup: KubeObject,
    pods: list[KubeObject],
    unit: KubeObject | None = None,
    tree: list[str] | None = None,
) -> int | None:
    """Open and plan the reap of ``episode``'s gang in its namespace's mode, then hand it on as a
    preemption's plan is (``tasks.after_plan``); the request id, None when the gang has an active request.
    With ``unit`` (a CompositePodGroup), ``pods`` are its ``tree``'s, whose open episodes the request reaps
    too."""
    from scheduler.preemption.tasks import after_plan  # the tasks module imports this one

    plan, facts = plan_of(podgroup, pods, unit)
    with transaction.atomic():
        request = ledger.open_new_request(
            episode.namespace,
            episode.name,
            pause_seconds=settings.GANGWEB_REQUEST_COOLDOWN_SECONDS,
            mode=mode_for(episode.namespace),
            policy=REAP,
            trigger=f"broken since {episode.since:%H:%M:%S} ({', '.join(episode.causes) or 'members missing'})",
        )
        if request is None:
            return None
        BrokenGang.objects.filter(pk=episode.pk).update(reaped_by=request)
        for key in tree or ():  # the tree's other broken gangs end with it: no reap of their own
            namespace, _, name = key.partition("/")
            BrokenGang.objects.filter(
                namespace=namespace, name=name, recovered_at__isnull=True, reaped_by__isnull=True
            ).update(reaped_by=request)
        ledger.begin_planning(request.pk)
        result = PlanResult(
            plan=plan,
            cost={"victim_units": len(plan["victims"]), "lost_gpu_seconds": 0.0},
            pods=facts,
        )
        after_plan(request.pk, result, planned_by="reaper")
    return request.pk
