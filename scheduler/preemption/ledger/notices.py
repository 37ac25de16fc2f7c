"""A plan's notice through its states: given once, withdrawn or ended; and the work each victim stands to lose.

The notice is written here before any victim is told (``give_notice`` commits first), so an execution that
resumes after a crash finds it and tells the victims again with the same deadline instead of giving a
second notice (docs/design.md "Notice").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from scheduler.preemption.events import publish
from scheduler.preemption.ledger.history import note, request_payload
from scheduler.preemption.models import Eviction, EvictionState, Plan
from scheduler.words import plural, utc


def notice_payload(plan: Plan) -> dict[str, Any]:
    """The live event of a notice: the request, the plan, its victim units and the deadline."""
    return {
        **request_payload(plan.request),
        "plan": plan.pk,
        "units": sorted(
            {f"{v.get('kind', 'Pod')} {v.get('namespace')}/{v.get('name')}" for v in plan.victims}
        ),
        "noticeGivenAt": plan.notice_given_at.isoformat() if plan.notice_given_at else None,
        "noticeDeadline": plan.notice_deadline.isoformat() if plan.notice_deadline else None,
        "noticeWithdrawnAt": plan.notice_withdrawn_at.isoformat() if plan.notice_withdrawn_at else None,
    }


def give_notice(plan_id: int, seconds: int) -> tuple[Plan, bool]:
    """Record that the plan's victims are told now, to be evicted at most ``seconds`` later: (plan, given
    now). A plan noticed before keeps its first notice and deadline."""
    with transaction.atomic():
        plan = Plan.objects.select_for_update().select_related("request").get(pk=plan_id)
        if plan.notice_given_at is not None:
            return plan, False
        now = timezone.now()
        plan.notice_given_at, plan.notice_deadline = now, now + timedelta(seconds=seconds)
        plan.save(update_fields=["notice_given_at", "notice_deadline"])
        payload = notice_payload(plan)
        note(
            "notice.given",
            f"notice given to {plural(len(payload['units']), 'victim unit')}: evicted together once each has "
            f"saved a checkpoint, at the latest at {utc(plan.notice_deadline)}",
            plan=plan,
            data={"units": payload["units"], "deadline": payload["noticeDeadline"], "seconds": seconds},
        )
        publish("notice.given", payload)
        return plan, True


def withdraw_notice(plan_id: int, why: str) -> Plan | None:
    """The gang no longer needs the room its notice was for: the plan's notice is withdrawn (None when it
    had none, or was withdrawn already)."""
    with transaction.atomic():
        plan = Plan.objects.select_for_update().select_related("request").get(pk=plan_id)
        if plan.notice_given_at is None or plan.notice_withdrawn_at is not None:
            return None
        plan.notice_withdrawn_at = timezone.now()
        plan.save(update_fields=["notice_withdrawn_at"])
        payload = notice_payload(plan)
        note(
            "notice.withdrawn",
            f"notice withdrawn from {plural(len(payload['units']), 'victim unit')}, nobody evicted: {why}",
            plan=plan,
            data={"units": payload["units"], "why": why},
        )
        publish("notice.withdrawn", {**payload, "reason": why})
        return plan


def end_notice(plan: Plan, why: str, checkpoints: Mapping[str, datetime]) -> None:
    """The notice is over (every unit saved, or the deadline came): history says why, and each victim pod
    not yet evicted starts its unsaved work at its unit's last checkpoint when that is later than its start
    (``checkpoints``, per victim unit)."""
    with transaction.atomic():
        rows = Eviction.objects.select_for_update().filter(
            plan_id=plan.pk,
            victim_unit__in=list(checkpoints),
            state__in=(EvictionState.PLANNED, EvictionState.DRY_RUN_OK),
        )
        for row in rows:
            saved = checkpoints[row.victim_unit]
            if row.work_since is None or saved > row.work_since:
                row.work_since = saved
                row.save(update_fields=["work_since"])
        note(
            "notice.ended",
            why,
            plan=plan,
            data={"checkpoints": {unit: when.isoformat() for unit, when in sorted(checkpoints.items())}},
        )
