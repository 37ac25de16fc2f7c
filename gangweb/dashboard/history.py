"""The overview chart's history: the map's figures sampled now and then, kept to a bound.

Sampled when the live map refreshes, at most once every ``GANGWEB_HISTORY_SECONDS``; the oldest rows
beyond ``GANGWEB_HISTORY_KEEP`` are deleted in the same step, so the table never grows without bound.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from gangweb.access.scope import Scope
from gangweb.dashboard.models import GpuSample

_last_sample = {"at": 0.0}


def _by_namespace(picture: dict[str, Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    gangs = picture["gangs"]
    for node in picture["nodes"]:
        for owner in node["gpus"]:
            if owner is not None:
                out.setdefault(gangs[owner]["namespace"], [0, 0])[0] += 1
    for gang in gangs:
        if gang["state"] == "waiting":
            out.setdefault(gang["namespace"], [0, 0])[1] += (gang["minCount"] - gang["placed"]) * gang[
                "podGpus"
            ]
    return out


def maybe_sample(picture: dict[str, Any], *, force: bool = False) -> GpuSample | None:
    now = time.time()
    if not force and now - _last_sample["at"] < settings.GANGWEB_HISTORY_SECONDS:
        return None
    _last_sample["at"] = now
    t = picture["totals"]
    sample = GpuSample.objects.create(
        at=datetime.fromtimestamp(now, UTC),
        gpus=t["gpus"],
        allocated=t["allocatedGpus"],
        free=t["freeGpus"],
        waiting_gpus=t["waitingGpus"],
        waiting_gangs=t["waitingGangs"],
        by_namespace=_by_namespace(picture),
    )
    prune(settings.GANGWEB_HISTORY_KEEP)
    return sample


def prune(keep: int) -> int:
    cutoff = GpuSample.objects.order_by("-at", "-id").values_list("at", flat=True)[keep : keep + 1]
    cutoff = list(cutoff)
    if not cutoff:
        return 0
    return GpuSample.objects.filter(at__lte=cutoff[0]).delete()[0]


def series(scope: Scope, limit: int = 720) -> dict[str, list]:
    """Columns for uPlot: time (s), allocated, idle (free), waiting GPUs, as this reader may see them."""
    rows = list(GpuSample.objects.order_by("-at")[:limit])[::-1]
    out: dict[str, list] = {"t": [], "allocated": [], "idle": [], "waiting": []}
    for row in rows:
        out["t"].append(round(row.at.timestamp()))
        if scope.all_namespaces:
            allocated, waiting = row.allocated, row.waiting_gpus
        else:
            mine = [v for ns, v in row.by_namespace.items() if scope.sees(ns)]
            allocated, waiting = sum(v[0] for v in mine), sum(v[1] for v in mine)
        out["allocated"].append(allocated)
        out["idle"].append(row.free)
        out["waiting"].append(waiting)
    return out
