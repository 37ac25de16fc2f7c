"""Broken gangs in the ledger: ``gang.broken`` when one breaks, ``gang.recovered`` when it runs again
or is gone (docs/idle.md).

Every process with a watch cache judges gang health (``scheduler.preemption.health``), so the same
change arrives here several times and out of order: a ``BrokenGang`` row per episode, its
``revision`` the newest resourceVersion judged, lets the first writer record it and every later,
staler writer find it done.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from scheduler.health import GangHealth
from scheduler.preemption.events import publish
from scheduler.preemption.models import BrokenGang, LedgerEntry
from scheduler.words import plural

STALE_AFTER = timedelta(minutes=10)


def _payload(episode: BrokenGang, state: str) -> dict:
    return {
        "podGroup": episode.podgroup,
        "state": state,
        "heldGpus": episode.held_gpus,
        "minCount": episode.min_count,
        "running": episode.running,
        "causes": list(episode.causes),
        "since": episode.since.isoformat(),
        "episode": episode.pk,
    }


def _entry(kind: str, episode: BrokenGang, message: str) -> None:
    LedgerEntry.objects.create(
        kind=kind,
        namespace=episode.namespace,
        name=episode.name,
        message=message,
        data=_payload(episode, "broken" if kind == "gang.broken" else "recovered"),
    )
    publish(kind, _payload(episode, "broken" if kind == "gang.broken" else "recovered"))


def record(health: GangHealth) -> BrokenGang | None:
    """Record ``health`` when it changes what the ledger says; the episode written, None when nothing was
    (already recorded, or a judgment older than the last one recorded)."""
    # Judgments lag each other by a cache's delay, seconds: an episode that ended long ago is not compared
    # (a cluster whose store was replaced counts its revisions from the start again).
    recent = Q(recovered_at__isnull=True) | Q(recovered_at__gte=timezone.now() - STALE_AFTER)
    newer = BrokenGang.objects.filter(
        recent, namespace=health.namespace, name=health.name, revision__gte=health.revision
    )
    if health.revision and newer.exists():
        return None
    if health.broken:
        return _open(health)
    return _close(health)


def _open(health: GangHealth) -> BrokenGang | None:
    try:
        with transaction.atomic():
            if BrokenGang.objects.filter(
                namespace=health.namespace, name=health.name, recovered_at__isnull=True
            ).exists():
                return None
            episode = BrokenGang.objects.create(
                namespace=health.namespace,
                name=health.name,
                held_gpus=health.held_gpus,
                min_count=health.min_count,
                running=health.running,
                causes=list(health.causes),
                revision=health.revision,
                since=timezone.now(),
            )
            _entry(
                "gang.broken",
                episode,
                f"{episode.podgroup} is broken: {health.running} of {health.min_count} members run "
                f"({', '.join(health.causes) or 'no cause seen'}) while it holds {plural(health.held_gpus, 'GPU')}",
            )
            return episode
    except IntegrityError:  # another process opened it between our read and our insert
        return None


def _close(health: GangHealth, *, why: str = "") -> BrokenGang | None:
    with transaction.atomic():
        episode = (
            BrokenGang.objects.select_for_update()
            .filter(namespace=health.namespace, name=health.name, recovered_at__isnull=True)
            .first()
        )
        if episode is None or (health.revision and episode.revision >= health.revision):
            return None
        episode.recovered_at = timezone.now()
        episode.revision = max(episode.revision, health.revision)
        episode.save(update_fields=["recovered_at", "revision"])
        held = episode.held_gpus * (episode.recovered_at - episode.since).total_seconds() / 3600
        _entry(
            "gang.recovered",
            episode,
            why
            or (
                f"{episode.podgroup} recovered: {health.running} of {health.min_count} members run"
                if health.held_gpus
                else f"{episode.podgroup} holds no GPUs any more"
            )
            + f" (broken for {int((episode.recovered_at - episode.since).total_seconds())} s, "
            f"{held:.2f} GPU-hours held)",
        )
        return episode


def open_episodes(namespaces: object = None) -> list[BrokenGang]:
    """The gangs broken now, oldest first (``namespaces``: a queryset filter value, None for all)."""
    rows = BrokenGang.objects.filter(recovered_at__isnull=True)
    if namespaces is not None:
        rows = rows.filter(namespace__in=namespaces)
    return list(rows.order_by("since", "id"))
