"""The checkpoint signal: when a workload last saved its work, and what evicting it now would lose.

A workload reports its last good checkpoint with the annotation ``gangweb.io/last-checkpoint`` (RFC 3339,
with an offset) on its PodGroup or on its pods; the conventions of other schedulers are read too
(``CHECKPOINT_ANNOTATIONS``, sources in docs/engine.md "Lost work"). A workload that reports nothing may be
assumed to checkpoint every N seconds of its run (the per-namespace default interval,
``GANGWEB_CHECKPOINT_INTERVAL_SECONDS``): ``assumed_checkpoint``. Pure Python: the engine, the
pipeline and the notice protocol all read the signal through these functions, so they agree on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

CHECKPOINT_ANNOTATION = "gangweb.io/last-checkpoint"
# Read in this order: gangweb's own key first, then the conventions found elsewhere (docs/engine.md "Lost work").
CHECKPOINT_ANNOTATIONS = (CHECKPOINT_ANNOTATION, "volcano.sh/last-checkpoint-time")

Moment = float | datetime  # seconds since the epoch, or an aware datetime


def parse_rfc3339(value: str) -> datetime | None:
    """An RFC 3339 timestamp with its offset (``Z`` or ``+hh:mm``), or None for anything else: a
    timestamp without an offset names no instant."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def last_checkpoint(annotations: Mapping[str, str]) -> datetime | None:
    """The last checkpoint an object's annotations report: the first of ``CHECKPOINT_ANNOTATIONS``
    that holds a valid timestamp. A malformed value counts as no report (it never blocks a plan)."""
    for key in CHECKPOINT_ANNOTATIONS:
        value = annotations.get(key)
        if value is not None:
            moment = parse_rfc3339(value)
            if moment is not None:
                return moment
    return None


def newest_checkpoint(sources: Iterable[Mapping[str, str]]) -> float | None:
    """The newest checkpoint reported by several objects (a pod, its PodGroup, the CompositePodGroups
    above), as seconds since the epoch: whichever of them saved last, the work up to then is kept."""
    newest: float | None = None
    for source in sources:
        moment = last_checkpoint(source)
        if moment is not None and (newest is None or moment.timestamp() > newest):
            newest = moment.timestamp()
    return newest


def assumed_checkpoint(started: Moment | None, interval_seconds: float, now: Moment) -> float | None:
    """The checkpoint of a workload that reports none but saves every ``interval_seconds`` of its run
    (0: never): its start plus the whole intervals since."""
    if started is None or interval_seconds <= 0:
        return None
    begin, end = _seconds(started), _seconds(now)
    if end <= begin:
        return None
    return begin + math.floor((end - begin) / interval_seconds) * interval_seconds


def lost_gpu_seconds(gpus: float, started: Moment | None, checkpoint: Moment | None, now: Moment) -> float:
    """GPU-seconds an eviction at ``now`` throws away: ``gpus * (now - max(started, checkpoint))``.

    Nothing is lost by what has not started; a checkpoint before the start (an earlier run's) counts
    from the start, and one in the future (clock skew) loses nothing."""
    if started is None or gpus <= 0:
        return 0.0
    since = _seconds(started)
    if checkpoint is not None:
        since = max(since, _seconds(checkpoint))
    return float(gpus) * max(_seconds(now) - since, 0.0)


@dataclass(frozen=True)
class Intervals:
    """How often a workload that reports no checkpoint is assumed to save, in seconds of its run: its
    namespace's interval, else the default (0: never, so it loses everything since it started)."""

    default: float = 0.0
    namespaces: Mapping[str, float] = field(default_factory=dict)

    def of(self, namespace: str) -> float:
        return self.namespaces.get(namespace, self.default)

    def __bool__(self) -> bool:
        return self.default > 0 or any(v > 0 for v in self.namespaces.values())


NO_INTERVALS = Intervals()


def _seconds(moment: Moment) -> float:
    return moment.timestamp() if isinstance(moment, datetime) else float(moment)
