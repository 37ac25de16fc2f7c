"""One reading of the cluster per process: its objects and the GPU map's picture of them, built once.

Two readers want the cluster every few seconds: the dashboard's ticker (``live.refresh``: the picture it
publishes) and the REST API (``gangweb/clusterview/rows.py``: its rows, and a waiting gang's reason,
which is the picture's own). They share one reading: ``take(cluster, max_age=...)`` hands back the latest
reading of that cluster if it started less than ``max_age`` seconds ago, else reads the cluster
(``current_objects``: the watch cache where there is one, not copied) and builds its picture once
(``picture.build_picture``). Takers are serialized: one that asks while another reads waits for that
reading and gets it, rather than reading again.

A reading taken beside requests (the ticker's, the API's background one) is ``paced``: after each
millisecond of work its build sleeps, and goes on sleeping, a millisecond at a time and at most 4 ms,
while the process is serving an HTTP request (``Pace``, counting Django's ``request_started`` and
``request_finished``, connected by ``count_requests`` from ``gangweb/apps.py``). The build needs the
interpreter lock for all its Python; a request thread coming back from the database otherwise waits up
to a switch interval behind it each time (docs/measurements.md has the figures).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from django.core.signals import request_finished, request_started

from gangweb.clusterview.picture import build_picture
from gangweb.clusterview.walk import Walk, no_pause, walk
from scheduler.cluster import Cluster, HoldsDevices, KubeObject, current_objects

# A paced build works PACE_EVERY seconds, then sleeps PACE_PAUSE (another thread waiting for the lock
# takes it), then PACE_WAIT at a time while requests are being served, PACE_MOST seconds at most.
PACE_EVERY = 0.001
PACE_PAUSE = 0.00005
PACE_WAIT = 0.001
PACE_MOST = 0.004

_serving_lock = threading.Lock()
_serving = 0  # HTTP requests between request_started and request_finished, in this process


def _started(**_: Any) -> None:
    global _serving
    with _serving_lock:
        _serving += 1


def _finished(**_: Any) -> None:
    global _serving
    with _serving_lock:
        _serving = max(0, _serving - 1)


def count_requests() -> None:
    """Count the HTTP requests this process serves, for ``Pace`` (once, at startup: the app's ``ready``)."""
    request_started.connect(_started, weak=False, dispatch_uid="gangweb.clusterview.reading.started")
    request_finished.connect(_finished, weak=False, dispatch_uid="gangweb.clusterview.reading.finished")


def serving() -> int:
    """How many HTTP requests the process is serving now."""
    return _serving


class Pace:
    """Called in a long build's loops; after each ``PACE_EVERY`` seconds of work it gives the
    interpreter lock away: to whichever thread waits for it, and for as long as requests are being
    served (``PACE_MOST`` at most, so a build always ends)."""

    def __init__(self) -> None:
        self._next = time.perf_counter() + PACE_EVERY

    def __call__(self) -> None:
        now = time.perf_counter()
        if now < self._next:
            return
        until = now + PACE_MOST
        time.sleep(PACE_PAUSE)
        while _serving > 0 and time.perf_counter() < until:
            time.sleep(PACE_WAIT)
        self._next = time.perf_counter() + PACE_EVERY


@dataclass(eq=False)
class Reading:
    cluster: Cluster
    started: float  # time.monotonic() when the cluster was read
    time: float  # the epoch the picture and the rows are dated by
    objects: list[KubeObject]
    picture: dict[str, Any]
    walked: Walk  # the one walk over ``objects`` the picture was built from, and the API's rows are

    @property
    def gpus(self) -> dict[int, int]:
        """id(pod) -> its GPUs, every unfinished pod's, counted once (``walk.walk``)."""
        return self.walked.gpus

    @property
    def bound(self) -> dict[str, KubeObject]:
        """ns/name -> live bound pod (``walk.walk``)."""
        return self.walked.bound

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
        pause = Pace() if paced else no_pause
        walked = walk(objects, pause)
        picture = build_picture(walked, now=now, cluster=cluster.name, holders=holders, pause=pause)
        _latest = Reading(cluster, started, now, objects, picture, walked)
        return _latest


def forget() -> None:
    """Drop the latest reading (tests; a cluster changed behind the process's back)."""
    global _latest
    with _take_lock:
        _latest = None
