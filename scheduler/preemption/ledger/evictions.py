"""Eviction rows through their states: dry run, claimed before the API call, evicted or failed.

A row is moved to ``evicting`` and committed BEFORE its API call (``claim_for_eviction``), so a successor
after a crash knows a request may have reached the API server (docs/pipeline.md, "Crash safety").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from scheduler.preemption import metrics
from scheduler.preemption.events import publish
from scheduler.preemption.ledger.history import note
from scheduler.preemption.models import Eviction, EvictionState


def _lock_eviction(eviction_id: int) -> Eviction:
    # of=("self",): lock the eviction row only; locking the joined plan and request rows too would
    # serialise every parallel eviction of a plan on its request row.
    return (
        Eviction.objects.select_for_update(of=("self",)).select_related("plan__request").get(pk=eviction_id)
    )


def _move(eviction: Eviction, new_state: str, **fields: Any) -> None:
    """One step of a row's state machine (``Eviction.check_transition``), with the fields it sets."""
    eviction.check_transition(new_state)
    eviction.state = new_state
    for name, value in fields.items():
        setattr(eviction, name, value)
    eviction.save()


def _eviction_payload(eviction: Eviction) -> dict[str, Any]:
    request = eviction.plan.request
    return {
        "request": request.pk,
        "podGroup": request.podgroup,
        "plan": eviction.plan_id,
        "pod": eviction.pod,
        "podUid": eviction.pod_uid,
        "node": eviction.node,
        "victimUnit": eviction.victim_unit,
        "state": eviction.state,
        "attempts": eviction.attempts,
        "code": eviction.api_code if eviction.api_code is not None else eviction.dry_run_code,
        "message": eviction.api_message or eviction.dry_run_message,
        "estimatedLostGpuSeconds": eviction.estimated_lost_gpu_seconds,
        "lostGpuSeconds": eviction.lost_gpu_seconds,
    }


def record_dry_run(eviction_id: int, code: int, message: str, ok: bool) -> Eviction:
    return record_dry_runs([(eviction_id, code, message, ok)])[0]


def record_dry_runs(answers: Sequence[tuple[int, int, str, bool]]) -> list[Eviction]:
    """planned|dry_run_ok -> dry_run_ok|dry_run_refused for each (row, code, message, ok), in one
    transaction: a plan's dry runs are recorded together once every one has answered (32 rows written from
    16 threads, one database connection each, took 0.1-0.4 s per row at 20,000 nodes in bench watch).
    Rows past that point are left as they are."""
    ids = [eviction_id for eviction_id, _, _, _ in answers]
    with transaction.atomic():
        # One lock statement, rows in id order (as any other multi-row lock of them would be).
        locked = {
            e.pk: e
            for e in Eviction.objects.select_for_update(of=("self",))
            .select_related("plan__request")
            .filter(pk__in=ids)
            .order_by("pk")
        }
        out = []
        for eviction_id, code, message, ok in answers:
            eviction = locked.get(eviction_id)
            if eviction is None:
                raise Eviction.DoesNotExist(f"eviction {eviction_id} does not exist")
            out.append(eviction)
            if eviction.state not in (EvictionState.PLANNED, EvictionState.DRY_RUN_OK):
                continue
            new_state = EvictionState.DRY_RUN_OK if ok else EvictionState.DRY_RUN_REFUSED
            _move(eviction, new_state, dry_run_code=code, dry_run_message=message, dry_run_at=timezone.now())
            verdict = "would be evicted" if ok else f"refused ({code}): {message}"
            note(
                "eviction.dry_run",
                f"dry run {eviction.pod}: {verdict}",
                plan=eviction.plan,
                data={"pod": eviction.pod, "code": code, "message": message},
            )
            publish("eviction", _eviction_payload(eviction))
        return out


def claim_for_eviction(eviction_id: int) -> Eviction | None:
    """dry_run_ok|evicting -> evicting with one more attempt, committed BEFORE the API call.

    Returns None when the row is past that point (evicted or failed): the caller must not call the API.
    """
    with transaction.atomic():
        eviction = _lock_eviction(eviction_id)
        if eviction.state not in (EvictionState.DRY_RUN_OK, EvictionState.EVICTING):
            return None
        _move(eviction, EvictionState.EVICTING, attempts=eviction.attempts + 1, requested_at=timezone.now())
        return eviction


def claim_all_for_eviction(eviction_ids: Sequence[int]) -> list[Eviction]:
    """dry_run_ok -> evicting with one more attempt for each of these rows, in one transaction committed
    BEFORE any of their API calls: the threads that call the API then start with the call, not with a
    database connection of their own and a write each (``evictor.evict(claimed=True)``). The rows moved,
    in id order; the others (resumed, past that point) are left to ``claim_for_eviction``."""
    with transaction.atomic():
        rows = list(
            Eviction.objects.select_for_update(of=("self",))
            .select_related("plan__request")
            .filter(pk__in=list(eviction_ids), state=EvictionState.DRY_RUN_OK)
            .order_by("pk")
        )
        now = timezone.now()
        for eviction in rows:
            _move(eviction, EvictionState.EVICTING, attempts=eviction.attempts + 1, requested_at=now)
        return rows


def record_eviction(
    eviction_id: int, *, evicted: bool, code: int | None, message: str, how: str = ""
) -> Eviction:
    """evicting -> evicted | failed with the API's answer (or the observation that replaced it)."""
    with transaction.atomic():
        eviction = _lock_eviction(eviction_id)
        if eviction.state in (EvictionState.EVICTED, EvictionState.FAILED):
            return eviction
        new_state = EvictionState.EVICTED if evicted else EvictionState.FAILED
        now = timezone.now()
        # The work really lost: GPUs x the time since its unsaved work began (docs/design.md "Lost work").
        lost = (
            round(eviction.gpus * max(0.0, (now - eviction.work_since).total_seconds()), 3)
            if evicted and eviction.work_since is not None
            else None
        )
        _move(eviction, new_state, api_code=code, api_message=message, finished_at=now, lost_gpu_seconds=lost)
        verdict = "evicted" if evicted else "NOT evicted"
        text = f"{eviction.pod} {verdict} after {eviction.attempts} attempt(s)" + (f" ({how})" if how else "")
        note(
            "eviction.result",
            f"{text}: {code} {message}".strip(),
            plan=eviction.plan,
            data={
                "pod": eviction.pod,
                "code": code,
                "message": message,
                "attempts": eviction.attempts,
                "how": how,
                "unit": eviction.victim_unit,
            },
        )
        publish("eviction", _eviction_payload(eviction))
        if evicted:
            gpus = eviction.gpus
            transaction.on_commit(lambda: metrics.EVICTED_GPUS.inc(gpus))
        return eviction


def record_attempt_error(eviction_id: int, code: int | None, message: str) -> None:
    """A retryable answer while finishing a unit: keep the row ``evicting``, remember the answer."""
    with transaction.atomic():
        eviction = _lock_eviction(eviction_id)
        if eviction.state != EvictionState.EVICTING:
            return
        eviction.api_code, eviction.api_message = code, message
        eviction.save(update_fields=["api_code", "api_message"])
        note(
            "eviction.retry",
            f"{eviction.pod}: attempt {eviction.attempts} answered {code} {message}; retrying",
            plan=eviction.plan,
            data={"pod": eviction.pod, "code": code, "attempts": eviction.attempts},
        )


def note_budget_spent(eviction_id: int, answer: str) -> None:
    """A real eviction was refused by a disruption budget that the plan's check found open: someone else
    spent it since. The pod is deleted next (UID precondition) so that its unit is not left half-evicted."""
    eviction = Eviction.objects.select_related("plan__request").get(pk=eviction_id)
    note(
        "budget.spent",
        f"{eviction.pod}: eviction refused ({answer}); the disruption budget was spent by "
        f"someone else after the plan's budget check, so the pod is deleted with a UID precondition to finish "
        f"{eviction.victim_unit}",
        plan=eviction.plan,
        data={"pod": eviction.pod, "unit": eviction.victim_unit, "answer": answer},
    )


def fail_unstarted_evictions(plan_id: int, why: str) -> int:
    """Mark every eviction of the plan that never reached the API as failed (nothing was evicted)."""
    with transaction.atomic():
        rows = list(
            Eviction.objects.select_for_update().filter(
                plan_id=plan_id, state__in=(EvictionState.PLANNED, EvictionState.DRY_RUN_OK)
            )
        )
        for eviction in rows:
            eviction.state = EvictionState.FAILED
            eviction.api_message = why
            eviction.finished_at = timezone.now()
            eviction.save()
        return len(rows)
