"""Waiting gangs in the order gangweb would serve them, with their position (Kueue's visibility API).

The order is the pipeline's own, not a promise of a scheduler queue: first the gangs with an open
request (oldest first: they are being planned or executed), then the gangs the next detection pass
opens a request for (``scheduler.preemption.detection``, in its order), then those pausing after a
failed request (``ledger.retry_at``, soonest first), then those still inside the grace period (soonest
first). Gangs whose preemption policy is ``Never`` are never served by gangweb: listed last, with no
position. Positions count every waiting gang, the reader's or not; rows of namespaces the reader does
not see are left out.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from gangweb.access.scope import Scope
from gangweb.api.v1.queries.ledger import verdicts
from gangweb.clusterview.rows import NEVER, ClusterView, cluster_view
from scheduler.preemption.models import ACTIVE_REQUEST_STATES, PreemptionRequest

WAITING_STATES = ("pending", "short")


def pending(scope: Scope) -> list[dict[str, Any]]:
    """The queue, worked out once per reading of the cluster (``cluster_view``), cut to ``scope``."""
    view = cluster_view()
    rows = getattr(view, "_queue", None)
    if rows is None:
        rows = view._queue = _queue(view)
    return [row for row in rows if scope.sees(row["namespace"])]


def _queue(view: ClusterView) -> list[dict[str, Any]]:
    now = time.time()
    waiting = {k: g for k, g in view.groups.items() if g["state"] in WAITING_STATES}
    active = {
        r.podgroup: r
        for r in PreemptionRequest.objects.filter(state__in=ACTIVE_REQUEST_STATES).order_by(
            "created_at", "id"
        )
        if r.podgroup in waiting
    }
    stuck = [k for k in view.stuck() if k in waiting and k not in active]
    rest = [k for k in waiting if k not in active and k not in stuck]
    verdict = verdicts(tuple(k.split("/", 1)) for k in stuck + rest)
    grace = settings.GANGWEB_PENDING_GRACE_SECONDS

    def when(key: str) -> float:
        again = (verdict.get(key) or {}).get("retryAt")
        since = waiting[key]["waitingSince"] or now
        return max(again.timestamp() if again else 0.0, since + grace)

    ordered: list[tuple[str, str]] = [
        (k, "planning") for k in sorted(active, key=lambda k: (active[k].created_at, active[k].pk))
    ]
    cooling = [
        k for k in stuck if (verdict.get(k) or {}).get("retryAt") and verdict[k]["retryAt"].timestamp() > now
    ]
    ordered += [(k, "next") for k in stuck if k not in cooling]
    later = cooling + [k for k in rest if waiting[k]["preemptionPolicy"] != NEVER]
    ordered += [(k, "later") for k in sorted(later, key=lambda k: (when(k), k))]
    ordered += [(k, "never") for k in sorted(rest) if waiting[k]["preemptionPolicy"] == NEVER]

    rows = []
    for position, (key, stage) in enumerate(ordered, start=1):
        group = waiting[key]
        request = active.get(key)
        rows.append(
            {
                "position": position if stage != "never" else None,
                "stage": stage,
                "namespace": group["namespace"],
                "name": group["name"],
                "priority": group["priority"],
                "priorityClass": group["priorityClass"],
                "minCount": group["minCount"],
                "pendingPods": group["pendingPods"],
                "gpus": group["gpus"] - group["placedGpus"],
                "waitingSeconds": group["waitingSeconds"],
                "request": request.pk if request else (verdict.get(key) or {}).get("request"),
                "servedAt": None if stage in ("planning", "next", "never") else _iso(when(key)),
                "reason": group["reason"],
            }
        )
    return rows


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat().replace("+00:00", "Z")
