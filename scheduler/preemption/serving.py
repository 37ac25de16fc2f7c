"""The order gangweb serves waiting gangs in, each one's place in it: a decision of the pipeline, which
the API's queue (``/api/v1/pending/``) only reads.

The order is the pipeline's own, not a promise of a scheduler queue: first the gangs with an open
request (oldest first: they are being planned or executed), then the gangs the next detection pass
opens a request for (``detection``, in its order), then those pausing after a failed request
(``ledger.next_request_at``, soonest first), then those still inside the grace period (soonest first).
Gangs whose preemption policy is ``Never`` are never served by gangweb: last, with no position.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from scheduler.preemption.ledger.requests import next_request_at, recent_requests
from scheduler.preemption.models import ACTIVE_REQUEST_STATES, PreemptionRequest

# Where a waiting gang is: its request is being planned or executed, the next detection pass opens
# one, it waits for its grace period or its pause to end, or gangweb never serves it.
PLANNING, NEXT, LATER, NEVER = "planning", "next", "later", "never"


@dataclass(frozen=True)
class Waiting:
    """A gang waiting to be placed, as the order needs it."""

    key: str  # gang key
    since: float | None  # when it started waiting (epoch seconds); None: now
    never: bool  # its preemption policy is Never


@dataclass(frozen=True)
class Place:
    key: str
    stage: str
    position: int | None  # None for NEVER
    request: int | None  # the open request, else the gang's last one
    served_at: float | None  # LATER: when it may be served (epoch seconds)


def serving_order(waiting: Iterable[Waiting], stuck: Iterable[str], *, now: float) -> list[Place]:
    """Every waiting gang's place, in order; ``stuck`` are the gangs the next detection pass opens a
    request for, in its order."""
    gangs = {gang.key: gang for gang in waiting}
    active = {
        r.podgroup: r
        for r in PreemptionRequest.objects.filter(state__in=ACTIVE_REQUEST_STATES).order_by(
            "created_at", "id"
        )
        if r.podgroup in gangs
    }
    due = [k for k in stuck if k in gangs and k not in active]
    rest = [k for k in gangs if k not in active and k not in due]
    recent = recent_requests(due + rest)
    pause = settings.GANGWEB_REQUEST_COOLDOWN_SECONDS
    again = {key: next_request_at(found, pause_seconds=pause) for key, found in recent.items()}
    grace = settings.GANGWEB_PENDING_GRACE_SECONDS

    def when(key: str) -> float:
        retry = again.get(key)
        since = gangs[key].since or now
        return max(retry.timestamp() if retry else 0.0, since + grace)

    ordered = [(k, PLANNING) for k in sorted(active, key=lambda k: (active[k].created_at, active[k].pk))]
    cooling = [k for k in due if (retry := again.get(k)) is not None and retry.timestamp() > now]
    ordered += [(k, NEXT) for k in due if k not in cooling]
    later = cooling + [k for k in rest if not gangs[k].never]
    ordered += [(k, LATER) for k in sorted(later, key=lambda k: (when(k), k))]
    ordered += [(k, NEVER) for k in sorted(rest) if gangs[k].never]

    places = []
    for position, (key, stage) in enumerate(ordered, start=1):
        request = active.get(key)
        last = recent.get(key)
        places.append(
            Place(
                key=key,
                stage=stage,
                position=position if stage != NEVER else None,
                request=request.pk if request else (last[0].pk if last else None),
                served_at=when(key) if stage == LATER else None,
            )
        )
    return places
