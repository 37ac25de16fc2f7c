"""One reading of the cluster per process: its objects and the GPU map's picture of them, built once.

Two readers want the cluster every few seconds: the dashboard's ticker (``live.refresh``: the picture it
publishes) and the REST API (``gangweb/api/v1/queries/cluster.py``: its rows, and a waiting gang's reason,
which is the picture's own). They share one reading: ``take(cluster, max_age=...)`` hands back the latest
reading of that cluster if it started less than ``max_age`` seconds ago, else reads the cluster
(``current_objects``: the watch cache where there is one, not copied) and builds its picture once
(``picture.build_picture``). Takers are serialized: one that asks while another reads waits for that
reading and gets it, rather than reading again.

A reading taken beside requests (the ticker's, the API's background one) is ``paced``: its build gives
the interpreter lock to the other threads every millisecond (``Pace``). A request thread coming back
from the database otherwise waits for a switch interval (5 ms) behind the build each time: at 5,000
PodGroups a 5 ms API call took 46 ms at the median beside an unpaced build (docs/api.md, "Measured").
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from gangweb.dashboard.picture import build_picture, no_pause
from scheduler.cluster import Cluster, HoldsDevices, KubeObject, current_objects

# Seconds of work between two pauses of a paced build, and the pause: long enough that a thread
# waiting for the lock is woken and takes it, short enough to cost the build little (~5 %).
PACE_EVERY = 0.001
PACE_PAUSE = 0.00005


class Pace:
    """Called in a long build's loops: every ``PACE_EVERY`` seconds it sleeps ``PACE_PAUSE``, which
    releases the interpreter lock to whichever thread waits for it."""

    def __init__(self) -> None:
        self._next = time.perf_counter() + PACE_EVERY

    def __call__(self) -> None:
        if time.perf_counter() >= self._next:
            time.sleep(PACE_PAUSE)
            self._next = time.perf_counter() + PACE_EVERY


@dataclass(eq=False)
class Reading:
    cluster: Cluster
    started: float  # time.monotonic() when the cluster was read
    time: float  # the epoch the picture and the rows are dated by
    objects: list[KubeObject]
    picture: dict[str, Any]
    gpus: dict[int, int] = field(default_factory=dict)  # id(pod) -> its GPUs, counted once (build_picture)

    def age(self) -> float:
        return time.monotonic() - self.started


_take_lock = threading.Lock()
_latest: Reading | None = None


def latest(cluster: Cluster) -> Reading | None:
    """The newest reading of ``cluster`` made in this process, however old, or None."""
    found = _latest
    return found if found is not None and found.cluster is cluster else None


def take(cluster: Cluster, *, max_age: float, paced: bool = False) -> Reading:
    """The latest reading of ``cluster`` if younger than ``max_age`` seconds, else a new one (which becomes
    the latest). Raises what the cluster raises when it cannot be read."""
    global _latest
    with _take_lock:
        found = latest(cluster)
        if found is not None and found.age() < max_age:
            return found
        started = time.monotonic()
        objects = list(current_objects(cluster))
        holders = cluster.device_holders() if isinstance(cluster, HoldsDevices) else None
        now = time.time()
        gpus: dict[int, int] = {}
        picture = build_picture(
            objects,
            now=now,
            cluster=cluster.name,
            holders=holders,
            gpus=gpus,
            pause=Pace() if paced else no_pause,
        )
        _latest = Reading(cluster, started, now, objects, picture, gpus)
        return _latest


def forget() -> None:
    """Drop the latest reading (tests; a cluster changed behind the process's back)."""
    global _latest
    with _take_lock:
        _latest = None
