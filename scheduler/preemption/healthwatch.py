"""Gang health as it happens: each process's watch cache tells a ``scheduler.health.HealthWatch``, and
what turns broken or recovers is recorded in the ledger (``ledger.health``) by one thread of this
process, off the informer's thread.

A change is recorded once it has held for ``GANGWEB_BROKEN_SETTLE_SECONDS`` (the watch delivers a
gang's deletion one pod at a time: a gang being torn down is not broken). The detection beat's
``sweep`` judges every gang of the cache too: the safety net for a missed event, and the only way for a
cluster without watch events (the demo's simulation).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from scheduler import health
from scheduler.cluster import Cluster, KubeObject, WatchEvents, current_objects
from scheduler.preemption.ledger import health as recorded

logger = logging.getLogger(__name__)

# (monotonic time the event arrived, ns/name) of the last change recorded, for the benchmark.
last_recorded: dict[str, float] = {}


class Recorder:
    """The watch of one cluster and the thread that records its changes."""

    def __init__(self, settle: float) -> None:
        self.settle = settle
        self.watch = health.HealthWatch(self._changed)
        self._queue: queue.Queue[tuple[float, health.GangHealth]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="gangweb-gang-health", daemon=True)
        self._thread.start()

    def on_event(self, event_type: str, resource: Any, obj: dict | None) -> None:
        self.watch.on_event(event_type, resource, obj)

    def _changed(self, judged: health.GangHealth) -> None:
        self._queue.put((time.monotonic(), judged))

    def drain(self) -> None:
        """Return once every change handed in so far is recorded or dropped."""
        self._queue.join()

    def _run(self) -> None:
        while True:
            arrived, judged = self._queue.get()
            try:
                self._record(arrived, judged)
            finally:
                self._queue.task_done()

    def _record(self, arrived: float, judged: health.GangHealth) -> None:
        wait = arrived + self.settle - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        now = self.watch.health(judged.key)
        if (now.state if now else health.HEALTHY) != judged.state:
            return  # it changed back meanwhile: nothing happened worth a ledger entry
        try:
            close_old_connections()
            if recorded.record(judged) is not None:
                last_recorded[judged.key] = arrived
        except Exception:  # the beat's sweep records it once the database answers
            logger.warning("could not record the health of %s", judged.key, exc_info=True)
        finally:
            connection.close()  # a thread of its own: its connection must not outlive the write


_recorders: dict[int, Recorder] = {}


def watch(cluster: Cluster) -> None:
    """Judge gang health from ``cluster``'s watch events (a cluster without them is swept by the beat)."""
    if not isinstance(cluster, WatchEvents) or not cluster.watching:
        return
    recorder = Recorder(float(settings.GANGWEB_BROKEN_SETTLE_SECONDS))
    _recorders[id(cluster)] = recorder
    cluster.add_listener(recorder.on_event)
    # The informers may have listed before the listener was added: take in the synced cache once.
    threading.Thread(
        target=_seed, args=(cluster, recorder), name="gangweb-gang-health-seed", daemon=True
    ).start()


def _seed(cluster: Cluster, recorder: Recorder) -> None:
    try:
        recorder.watch.seed(current_objects(cluster))
    except Exception:  # not synced in time: the beat's sweep covers the gangs meanwhile
        logger.warning("gang health: the watch cache could not be read to start from", exc_info=True)


def recorder_for(cluster: Cluster) -> Recorder | None:
    return _recorders.get(id(cluster))


def sweep(objects: list[KubeObject]) -> dict[str, list[str]]:
    """Judge every gang among ``objects`` and record what the ledger does not say yet."""
    judged = health.judge_all(objects)
    broken, recovered = [], []
    for key, now in sorted(judged.items()):
        if now.broken and recorded.record(now) is not None:
            broken.append(key)
    for episode in recorded.open_episodes():
        now = judged.get(episode.podgroup)
        if now is None or not now.broken:
            gone = now or health.GangHealth(episode.namespace, episode.name, episode.min_count, 0, 0)
            if recorded.record(gone) is not None:
                recovered.append(episode.podgroup)
    return {"broken": broken, "recovered": recovered}
