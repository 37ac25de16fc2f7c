"""Waiting gangs in the order gangweb would serve them, with their position (Kueue's visibility API).

The order and the positions are the pipeline's (``scheduler/preemption/serving.py``); this reads them.
Positions count every waiting gang, the reader's or not; rows of namespaces the reader does not see
are left out.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from gangweb.access.scope import Scope
from gangweb.clusterview.rows import NEVER, ClusterView, cluster_view
from scheduler.preemption import serving

WAITING_STATES = ("pending", "short")


def pending(scope: Scope) -> list[dict[str, Any]]:
    """The queue, worked out once per reading of the cluster (``cluster_view``), cut to ``scope``."""
    view = cluster_view()
    rows = getattr(view, "_queue", None)
    if rows is None:
        rows = view._queue = _queue(view)
    return [row for row in rows if scope.sees(row["namespace"])]


def _queue(view: ClusterView) -> list[dict[str, Any]]:
    waiting = {k: g for k, g in view.groups.items() if g["state"] in WAITING_STATES}
    gangs = [
        serving.Waiting(k, g["waitingSince"], g["preemptionPolicy"] == NEVER) for k, g in waiting.items()
    ]
    rows = []
    for place in serving.serving_order(gangs, view.stuck(), now=time.time()):
        group = waiting[place.key]
        rows.append(
            {
                "position": place.position,
                "stage": place.stage,
                "namespace": group["namespace"],
                "name": group["name"],
                "priority": group["priority"],
                "priorityClass": group["priorityClass"],
                "minCount": group["minCount"],
                "pendingPods": group["pendingPods"],
                "gpus": group["gpus"] - group["placedGpus"],
                "waitingSeconds": group["waitingSeconds"],
                "request": place.request,
                "servedAt": None if place.served_at is None else _iso(place.served_at),
                "reason": group["reason"],
            }
        )
    return rows


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat().replace("+00:00", "Z")
