"""The lost-work budget and the checkpoint intervals, as the pipeline hands them to the engine.

``terms(now)`` reads the settings and what the ledger says preemption took in the rolling hour, and gives
the engine's ``Intervals`` and ``Allowance`` (docs/pipeline.md "The lost-work budget"). A victim unit's
work counts as lost from the moment the first of its pods' evictions was requested, with the lost
GPU-seconds its plan estimated for it; a queue's, through the queue its gang is in now (``queues``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from scheduler.engine.allowance import Allowance
from scheduler.engine.checkpoints import Intervals

logger = logging.getLogger(__name__)

WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Queues:
    """The queue (``SYSTEM/NAME``, as GANGWEB_QUEUE_LOST_WORK_BUDGETS names it) of each gang (its PodGroup's
    ``NS/NAME``, else its pod's) and of each pod, where a queue manager's objects say."""

    gangs: Mapping[str, str] = field(default_factory=dict)
    pods: Mapping[str, str] = field(default_factory=dict)


def queues(objects: Iterable[Mapping[str, Any]], snapshot: Any) -> Queues:
    """The queues of the gangs and pods in ``objects`` (parsed into ``snapshot``), read only when a queue
    budget is set: the queue model costs a pass over every object. A malformed queue manager object
    leaves every queue uncapped for this plan, logged (the namespace budgets still hold)."""
    if not settings.GANGWEB_QUEUE_LOST_WORK_BUDGETS:
        return Queues()
    from scheduler.queues import queues_from
    from scheduler.queues.cluster import build_reading

    try:
        reading = build_reading(objects, snapshot)
        model = queues_from(reading)
    except ValueError as exc:
        logger.warning("lost-work budget without queue caps: %s", exc)
        return Queues()
    gangs = {gang: f"{system}/{name}" for gang, (system, name) in model.gangs.items()}
    pods = {pod.key: gangs[pod.group or pod.key] for pod in reading.pods if (pod.group or pod.key) in gangs}
    return Queues(gangs, pods)


def intervals() -> Intervals:
    """GANGWEB_CHECKPOINT_INTERVAL_SECONDS, with GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS over it."""
    return Intervals(
        default=settings.GANGWEB_CHECKPOINT_INTERVAL_SECONDS,
        namespaces=dict(settings.GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS),
    )


def lost_units(since: datetime) -> Iterator[tuple[str, str, float]]:
    """Each victim unit with evictions requested since ``since``: its namespace, its gang's key (``NS/NAME``)
    and the GPU-seconds its plan estimated it lost."""
    from scheduler.preemption.models import Eviction, EvictionState, Plan  # local: gang plan reads no ledger

    units = set(
        Eviction.objects.filter(
            state__in=(EvictionState.EVICTING, EvictionState.EVICTED), requested_at__gte=since
        ).values_list("plan_id", "victim_unit")
    )
    if not units:
        return
    victims = dict(Plan.objects.filter(id__in={plan for plan, _ in units}).values_list("id", "victims"))
    for plan_id, unit in units:
        for victim in victims.get(plan_id) or []:
            key = f"{victim.get('namespace')}/{victim.get('name')}"
            if f"{victim.get('kind', 'Pod')} {key}" == unit:
                yield str(victim.get("namespace")), key, float(victim.get("lostGpuSeconds") or 0.0)


def lost_by_namespace(since: datetime) -> dict[str, float]:
    """GPU-seconds each namespace's victim units lost to evictions requested since ``since``."""
    lost: dict[str, float] = defaultdict(float)
    for namespace, _key, gpu_seconds in lost_units(since):
        lost[namespace] += gpu_seconds
    return dict(lost)


def lost_by_queue(since: datetime, gangs: Mapping[str, str]) -> dict[str, float]:
    """GPU-seconds each queue's victim units lost since ``since``, by the queue each is in now (``gangs``);
    a unit in no queue now (gone, or left its queue manager) counts for its namespace only."""
    lost: dict[str, float] = defaultdict(float)
    for _namespace, key, gpu_seconds in lost_units(since):
        if key in gangs:
            lost[gangs[key]] += gpu_seconds
    return dict(lost)


def allowance(now: datetime | None = None, queues: Queues | None = None) -> Allowance | None:
    """What each namespace's and queue's victims may still lose this rolling hour; None when no budget is
    set. A queue budget caps only the pods ``queues`` places in that queue."""
    default = settings.GANGWEB_LOST_WORK_BUDGET_GPU_HOURS
    caps = settings.GANGWEB_NAMESPACE_LOST_WORK_BUDGETS
    queue_caps = settings.GANGWEB_QUEUE_LOST_WORK_BUDGETS
    if default is None and not caps and not queue_caps:
        return None
    since = (now or timezone.now()) - WINDOW
    lost = lost_by_namespace(since)
    left = {ns: hours * 3600 - lost.get(ns, 0.0) for ns, hours in caps.items()}
    if default is not None:
        left.update({ns: default * 3600 - spent for ns, spent in lost.items() if ns not in caps})
    queues = queues or Queues()
    queue_lost = lost_by_queue(since, queues.gangs) if queue_caps else {}
    return Allowance(
        default=None if default is None else default * 3600,
        namespaces=left,
        queues={queue: hours * 3600 - queue_lost.get(queue, 0.0) for queue, hours in queue_caps.items()},
        queue_of={pod: queue for pod, queue in queues.pods.items() if queue in queue_caps},
    )
