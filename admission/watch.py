"""The PodGroups the API server holds, listed and watched into the validating webhook's ``PodGroupCache``.

The scheduler's informer does the work (``scheduler.kube``: ``KubeCluster`` limited to PodGroups, one
Reflector): it resumes a dropped watch from the last resourceVersion or bookmark, lists again after
410 Gone, and backs off on failures. Each listed and watched PodGroup reaches the cache as an event,
and the end of each list marks the cache complete (``/readyz`` waits for the first). Every serving
process runs its own watch (threads do not survive the fork of ``--workers``); a forked process gets
clients of its own (``KubeCluster`` notices the new pid). RBAC: ``list`` and ``watch`` on
``podgroups.scheduling.k8s.io``. No Django here.
"""

from __future__ import annotations

import logging
from typing import Any

from admission.state import PodGroupCache
from scheduler.cluster import ClusterError
from scheduler.kube import KubeCluster
from scheduler.kube.resources import PODGROUPS, Resource

logger = logging.getLogger(__name__)


class PodGroupWatch:
    def __init__(self, cache: PodGroupCache, cluster: KubeCluster) -> None:
        self.cache = cache
        self.cluster = cluster
        cluster.add_listener(self._event)

    @classmethod
    def from_environment(cls, cache: PodGroupCache, **kwargs: Any) -> PodGroupWatch:
        """In-cluster service account when present, else ``$KUBECONFIG`` (``KubeCluster.from_environment``)."""
        return cls(cache, KubeCluster.from_environment(resources=(PODGROUPS,), **kwargs))

    def _event(self, event_type: str, resource: Resource, obj: dict | None) -> None:
        self.cache.apply(event_type, obj)

    def start(self) -> None:
        """List and watch from a thread of this process; returns at once (the cache says when it is listed)."""
        self.cluster.start(wait=False)
        try:
            served = self.cluster.served()  # read by ``start``; read again only if that failed
        except ClusterError:
            served = None  # the list/watch retries and /readyz waits, as for any API server down
        if served is not None and not served.podgroups:
            why = served.limits()[0]
            self.cache.mark_unserved(why)
            logger.error("no PodGroups to watch: %s", why, extra={"served": served.as_dict()})
            return
        logger.info("watching PodGroups for the validating webhook")

    def stop(self) -> None:
        self.cluster.close()
