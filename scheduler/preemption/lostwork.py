"""The lost-work budget and the checkpoint intervals, as the pipeline hands them to the engine.

``terms(now)`` reads the settings and what the ledger says preemption took in the rolling hour, and gives
the engine's ``Intervals`` and ``Allowance`` (docs/pipeline.md "The lost-work budget"). A victim unit's
work counts as lost from the moment the first of its pods' evictions was requested, with the lost
GPU-seconds its plan estimated for it.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from scheduler.engine.allowance import Allowance
from scheduler.engine.checkpoints import Intervals

WINDOW = timedelta(hours=1)


def intervals() -> Intervals:
    """GANGWEB_CHECKPOINT_INTERVAL_SECONDS, with GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS over it."""
    return Intervals(
        default=settings.GANGWEB_CHECKPOINT_INTERVAL_SECONDS,
        namespaces=dict(settings.GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS),
    )


def lost_by_namespace(since: datetime) -> dict[str, float]:
    """GPU-seconds each namespace's victim units lost to evictions requested since ``since``."""
    from scheduler.preemption.models import Eviction, EvictionState, Plan  # local: gang plan reads no ledger

    units = set(
        Eviction.objects.filter(
            state__in=(EvictionState.EVICTING, EvictionState.EVICTED), requested_at__gte=since
        ).values_list("plan_id", "victim_unit")
    )
    if not units:
        return {}
    victims = dict(Plan.objects.filter(id__in={plan for plan, _ in units}).values_list("id", "victims"))
    lost: dict[str, float] = defaultdict(float)
    for plan_id, unit in units:
        for victim in victims.get(plan_id) or []:
            if f"{victim.get('kind', 'Pod')} {victim.get('namespace')}/{victim.get('name')}" == unit:
                lost[str(victim.get("namespace"))] += float(victim.get("lostGpuSeconds") or 0.0)
    return dict(lost)


def allowance(now: datetime | None = None) -> Allowance | None:
    """What each namespace's victims may still lose this rolling hour; None when no budget is set."""
    default = settings.GANGWEB_LOST_WORK_BUDGET_GPU_HOURS
    caps = settings.GANGWEB_NAMESPACE_LOST_WORK_BUDGETS
    if default is None and not caps:
        return None
    lost = lost_by_namespace((now or timezone.now()) - WINDOW)
    left = {ns: hours * 3600 - lost.get(ns, 0.0) for ns, hours in caps.items()}
    if default is not None:
        left.update({ns: default * 3600 - spent for ns, spent in lost.items() if ns not in caps})
    return Allowance(default=None if default is None else default * 3600, namespaces=left)
