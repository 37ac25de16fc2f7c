"""Detection on the watch event: a PodGroup turning Unschedulable is detected when the event arrives.

Each process whose cluster is a watch cache (``runtime.get_cluster``) listens to PodGroup events. When
kube-scheduler sets ``PodGroupInitiallyScheduled=False`` on a group (a new condition, or a new
``lastTransitionTime``), a detection pass for that gang (``scheduler.detect_unschedulable_gangs`` with
``podgroup``, which reads the same cache) is enqueued at once instead of waiting for the next beat. Every worker process watches, so the
enqueue is claimed once per transition in Redis (``SET NX``, an hour); without Redis (the demo) each
process enqueues its own, which detection's one-active-request rule makes harmless. With Celery eager (no
broker at all) nothing is enqueued: the pass would run on the watch's own thread. The beat stays as the
safety net (pending pods past the grace period, a missed event).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings

from scheduler import redisclient
from scheduler.cluster import Cluster, WatchEvents
from scheduler.engine.gangkey import GangKey, gang_key_of
from scheduler.kinds import is_native
from scheduler.preemption.detection import unschedulable_condition

logger = logging.getLogger(__name__)

CLAIM_PREFIX = "gangweb:trigger:"
CLAIM_SECONDS = 3600
# When the last transition was seen, per PodGroup (ns/name -> lastTransitionTime), in this process.
_seen: dict[str, str] = {}
# (monotonic time the event arrived, ns/name) of the last enqueue, for the benchmark and the log.
last_trigger: dict[str, float] = {}


def _claim(gang_key: GangKey, transition: str) -> bool:
    if not settings.REDIS_URL:
        return True
    client = redisclient.shared(settings.REDIS_URL, timeout=None)
    return bool(client.set(f"{CLAIM_PREFIX}{gang_key}:{transition}", "1", nx=True, ex=CLAIM_SECONDS))


def on_event(event_type: str, resource: Any, obj: dict | None) -> None:
    if event_type not in ("ADDED", "MODIFIED") or not obj or not is_native(obj, "PodGroup"):
        return
    if settings.CELERY_TASK_ALWAYS_EAGER:
        # No broker: "enqueue" would run the pass here, on the PodGroup watch's own thread, and the pass
        # waits for that very watch to sync (it timed out after 120 s in a test). Without a broker there is
        # no worker to hurry either; whoever runs detection reads the same cache.
        return
    meta = obj.get("metadata") or {}
    gang_key = gang_key_of(str(meta.get("namespace")), str(meta.get("name")))
    condition = unschedulable_condition(obj)
    if condition is None:
        _seen.pop(gang_key, None)
        return
    transition = str(condition.get("lastTransitionTime") or meta.get("resourceVersion") or "")
    if _seen.get(gang_key) == transition:
        return
    _seen[gang_key] = transition
    try:
        if not _claim(gang_key, transition):
            return
        from scheduler.preemption.tasks import detect_unschedulable_gangs

        detect_unschedulable_gangs.apply_async(kwargs={"podgroup": gang_key})
        last_trigger[gang_key] = time.monotonic()
        logger.info("PodGroup %s turned unschedulable: detection enqueued from the watch event", gang_key)
    except Exception:  # the beat's pass still finds it
        logger.warning("could not enqueue detection for %s", gang_key, exc_info=True)


def watch(cluster: Cluster) -> None:
    """Listen to ``cluster``'s PodGroup events (a cluster without watch events has nothing to listen to)."""
    if isinstance(cluster, WatchEvents) and cluster.watching:
        cluster.add_listener(on_event)
