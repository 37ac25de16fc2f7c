"""``observe`` mode: record what kube-scheduler preempted, beside what gangweb would have done.

kube-scheduler marks each victim pod with ``DisruptionTarget=True`` (reason ``PreemptionByScheduler``)
and records a ``Preempted`` event whose involved object is the pod and whose related object is the
preemptor PodGroup. Both show up in snapshots; the events name the preemptor. For every preemptor in
an observe-mode namespace the victims go into the ledger as a plan of source ``kube-scheduler``; if
gangweb had no request for that gang yet, one is opened and its own engine plans on the state just
before the preemption (victims restored, preemptor pods pending again), so both sit side by side.
gangweb never evicts anything here.
"""

from __future__ import annotations

import copy
import logging
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.utils import timezone

from scheduler.cluster import GANGWEB_CONTROLLER, Cluster, KubeObject, ListsEvents, object_key
from scheduler.engine import parse_snapshot
from scheduler.kinds import is_native
from scheduler.preemption import ledger, planning
from scheduler.preemption.facts import VictimFacts
from scheduler.preemption.models import (
    Eviction,
    EvictionState,
    Mode,
    PlanSource,
    PreemptionRequest,
    RequestState,
)
from scheduler.preemption.runtime import mode_for

logger = logging.getLogger(__name__)

PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
PREEMPTOR_IN_MESSAGE = re.compile(r"\bpodgroup (\S+)", re.IGNORECASE)
# An observation joins the gang's latest request when that one is this recent.
ATTACH_WINDOW = timedelta(hours=1)


def _event_parts(event: KubeObject) -> tuple[dict, dict, str]:
    """(involved object, related object, message) of a core/v1 or events.k8s.io/v1 Event."""
    involved = event.get("involvedObject") or event.get("regarding") or {}
    related = event.get("related") or {}
    return involved, related, event.get("message") or event.get("note") or ""


def observed_victims(objects: Iterable[KubeObject]) -> dict[str, str | None]:
    """Victim pod key -> preemptor PodGroup key (None when no event names it)."""
    objects = list(objects)
    uid_to_group = {
        (o.get("metadata") or {}).get("uid"): object_key(o) for o in objects if is_native(o, "PodGroup")
    }
    victims: dict[str, str | None] = {}
    for pod in (o for o in objects if is_native(o, "Pod")):
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if (
                condition.get("type") == "DisruptionTarget"
                and condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            ):
                victims.setdefault(object_key(pod), None)
    for event in (o for o in objects if is_native(o, "Event") and o.get("reason") == "Preempted"):
        if event.get("reportingController") == GANGWEB_CONTROLLER:
            continue  # our own enforce-mode evictions are in the ledger already
        involved, related, message = _event_parts(event)
        if not is_native(involved, "Pod"):
            continue
        pod_key = f"{involved.get('namespace') or (event.get('metadata') or {}).get('namespace')}/{involved.get('name')}"
        preemptor = None
        if is_native(related, "PodGroup") and related.get("name"):
            preemptor = f"{related.get('namespace') or involved.get('namespace')}/{related['name']}"
        else:
            # "Preempted by podgroup <uid> on node cluster"
            named = PREEMPTOR_IN_MESSAGE.search(message)
            preemptor = uid_to_group.get(named.group(1)) if named else None
        if preemptor:
            victims[pod_key] = preemptor
    return victims


def event_uids(objects: Iterable[KubeObject]) -> dict[str, str]:
    """Victim pod key -> the UID kube-scheduler's ``Preempted`` event names (events.k8s.io ``regarding.uid``):
    the pod's identity once kube-scheduler has deleted it."""
    found = {}
    for event in (o for o in objects if o.get("kind") == "Event" and o.get("reason") == "Preempted"):
        involved, _, _ = _event_parts(event)
        if involved.get("kind") == "Pod" and involved.get("uid"):
            namespace = involved.get("namespace") or (event.get("metadata") or {}).get("namespace")
            found[f"{namespace}/{involved.get('name')}"] = involved["uid"]
    return found


def preemption_events(cluster: Cluster) -> list[KubeObject]:
    """``Preempted`` events, for adapters that list events apart from the snapshot (the kube adapter)."""
    return list(cluster.list_events(reason="Preempted")) if isinstance(cluster, ListsEvents) else []


def state_before(objects: list[KubeObject], victims: set[str], preemptor: str) -> list[KubeObject]:
    """The snapshot as it was before kube-scheduler preempted: victims running, the gang pending."""
    namespace, _, name = preemptor.partition("/")
    before = []
    for obj in objects:
        if is_native(obj, "Pod"):
            key = object_key(obj)
            spec = obj.get("spec") or {}
            in_gang = (obj.get("metadata") or {}).get("namespace") == namespace and (
                spec.get("schedulingGroup") or {}
            ).get("podGroupName") == name
            if key in victims or in_gang:
                obj = copy.deepcopy(obj)
                if key in victims:
                    obj["metadata"].pop("deletionTimestamp", None)
                    obj.setdefault("status", {})["phase"] = "Running"
                if in_gang:
                    obj["spec"].pop("nodeName", None)
        elif is_native(obj, "Event"):
            continue
        before.append(obj)
    return before


def _request_for(preemptor: str) -> tuple[PreemptionRequest, bool]:
    namespace, _, name = preemptor.partition("/")
    recent = (
        PreemptionRequest.objects.filter(
            namespace=namespace, name=name, mode=Mode.OBSERVE, created_at__gte=timezone.now() - ATTACH_WINDOW
        )
        .order_by("-created_at")
        .first()
    )
    if recent is not None:
        return recent, False
    return ledger.open_request(namespace, name, mode=Mode.OBSERVE, trigger="kube-scheduler preempted for it")


def _gangweb_evicted(pod_key: str) -> bool:
    namespace, _, name = pod_key.partition("/")
    return Eviction.objects.filter(
        namespace=namespace,
        name=name,
        plan__source=PlanSource.ENGINE,
        state__in=(EvictionState.EVICTING, EvictionState.EVICTED),
    ).exists()


def _already_recorded(pod_keys: list[str]) -> set[tuple[str, str]]:
    """(pod key, UID) pairs already in a ``kube-scheduler`` plan: conditions and events outlive one pass."""
    names = {key.partition("/")[2] for key in pod_keys}
    rows = Eviction.objects.filter(plan__source=PlanSource.KUBE_SCHEDULER, name__in=names).values_list(
        "namespace", "name", "pod_uid"
    )
    return {(f"{namespace}/{name}", uid) for namespace, name, uid in rows}


def record_observations(objects: list[KubeObject]) -> list[str]:
    """Put newly seen kube-scheduler preemptions in the ledger; returns the victim pods recorded."""
    victims = observed_victims(objects)
    by_preemptor: dict[str, list[str]] = defaultdict(list)
    uids = event_uids(objects)
    uids.update(
        (object_key(o), (o.get("metadata") or {}).get("uid") or "") for o in objects if is_native(o, "Pod")
    )
    seen = _already_recorded([key for key, preemptor in victims.items() if preemptor])
    for pod_key, preemptor in victims.items():
        if preemptor is None or (pod_key, uids.get(pod_key, "")) in seen:
            continue
        if mode_for(preemptor.partition("/")[0]) != Mode.OBSERVE or _gangweb_evicted(pod_key):
            continue
        by_preemptor[preemptor].append(pod_key)
    if not by_preemptor:
        return []
    snapshot = parse_snapshot(objects)
    recorded: list[str] = []
    for preemptor, pods in sorted(by_preemptor.items()):
        request, created = _request_for(preemptor)
        units = _units(snapshot, pods)
        facts = {key: VictimFacts(uid=uids.get(key, "")) for key in pods}
        facts.update(planning.pod_facts(snapshot, pods))
        new = ledger.record_observed_victims(request.pk, units, facts)
        recorded += new
        gone = sorted(key for key in pods if key not in snapshot.pod_index)
        if created and gone:
            # A real kube-scheduler deletes its victims at once: without them the state before cannot be rebuilt,
            # and a plan on what is left would claim the gang fits without preemption.
            ledger.finish(
                request.pk,
                RequestState.OBSERVED,
                f"observe mode: kube-scheduler preempted; its victims were deleted before gangweb read them "
                f"({', '.join(gone)}), so gangweb's plan for the state before is not computed",
            )
        elif created:
            _plan_counterfactual(request.pk, state_before(objects, set(pods), preemptor))
    return recorded


def _units(snapshot: Any, pods: list[str]) -> dict[str, list[str]]:
    """Victim unit label -> its observed pods (whole group for ``disruptionMode: all``)."""
    units: dict[str, list[str]] = defaultdict(list)
    for key in sorted(pods):
        index = snapshot.pod_index.get(key)
        pod = snapshot.pods[index] if index is not None else None
        group = snapshot.group_of(pod) if pod is not None else None
        if group is not None and group.disruption == "all":
            units[f"{group.kind} {group.key}"].append(key)
        else:
            units[f"Pod {key}"].append(key)
    return dict(units)


def _plan_counterfactual(request_id: int, before: list[KubeObject]) -> None:
    request = ledger.begin_planning(request_id)
    if request is None:
        return
    try:
        result = planning.compute(before, request.podgroup, request.policy)
    except Exception as exc:
        logger.warning(
            "observe: could not plan the counterfactual", extra={"request": request_id, "error": str(exc)}
        )
        ledger.finish(request_id, RequestState.FAILED, f"could not compute gangweb's plan: {exc}")
        return
    ledger.record_plan(
        request_id,
        result.plan,
        cost=result.cost,
        pods=result.pods,
        planning_seconds=result.seconds,
        planned_by="observe",
    )
    ledger.finish(
        request_id,
        RequestState.OBSERVED,
        "observe mode: kube-scheduler preempted; gangweb's plan for the same state is recorded beside it",
    )
