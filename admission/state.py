"""What the validating webhook knows about the cluster: the PodGroups as the API server holds them.

A decision depends on the review itself and on this view only, never on earlier reviews. Reviews come
from whoever can reach the webhook: a forged PodGroup review remembered here used to deny every real
pod of that gang, and a gang's "first member" was whichever pod one replica happened to see first, so
two replicas could answer the same pod differently. The view is filled from the API by a list+watch
(``admission.watch``, the scheduler's informer); the review path only reads it. Replicas whose watches
have caught up hold the same view, so they give a review the same answer; a replica is not ready
(``/readyz``) until its first list is in.

Without a cluster to watch (the demo, unit tests) the view stays empty and complete: a pod is then
compared with no PodGroup, and allowed as far as this check goes.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec

from admission.claims import ClaimEntry, group_entries
from scheduler.engine.gangkey import GangKey, gang_key_of


class CachedPodGroup(msgspec.Struct, frozen=True, gc=False):
    """The fields of a PodGroup that its members are checked against."""

    priority: int | None
    priority_class: str
    # spec.resourceClaims (KEP-5729), the well-formed entries: what a member's entries are compared with.
    claims: tuple[ClaimEntry, ...] = ()


def cached_podgroup(podgroup: dict[str, Any]) -> CachedPodGroup:
    spec = podgroup.get("spec") if isinstance(podgroup.get("spec"), dict) else {}
    priority = spec.get("priority")
    priority_class = spec.get("priorityClassName")
    return CachedPodGroup(
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        priority_class=priority_class if isinstance(priority_class, str) else "",
        claims=group_entries(spec.get("resourceClaims")),
    )


def gang_key_of_podgroup(podgroup: dict[str, Any]) -> GangKey | None:
    metadata = podgroup.get("metadata") if isinstance(podgroup.get("metadata"), dict) else {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if isinstance(namespace, str) and isinstance(name, str) and namespace and name:
        return gang_key_of(namespace, name)
    return None


class PodGroupCache:
    """The PodGroups by gang key, written by one watch thread, read by the request path.

    Reads take no lock: a dict lookup is atomic, and each entry is replaced whole (frozen).
    """

    def __init__(self) -> None:
        self._podgroups: dict[GangKey, CachedPodGroup] = {}
        self._synced = threading.Event()
        # Why the cluster has no PodGroups at all (discovery found them not served); "" when it has.
        self.unserved = ""

    def get(self, gang_key: GangKey) -> CachedPodGroup | None:
        return self._podgroups.get(gang_key)

    def apply(self, event_type: str, podgroup: dict[str, Any] | None) -> None:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``) of a PodGroup as the API server sent it;
        ``RELIST`` (after a list has been applied as events) marks the view complete."""
        if event_type == "RELIST":
            self._synced.set()
            return
        gang_key = gang_key_of_podgroup(podgroup) if isinstance(podgroup, dict) else None
        if gang_key is None:
            return
        if event_type == "DELETED":
            self._podgroups.pop(gang_key, None)
        elif event_type in ("ADDED", "MODIFIED"):
            self._podgroups[gang_key] = cached_podgroup(podgroup)

    def mark_synced(self) -> None:
        """Nothing (more) to list: the view is complete as it is (no cluster to watch)."""
        self._synced.set()

    def mark_unserved(self, why: str) -> None:
        """The API server serves no PodGroups: the view is complete and empty, and ``why`` says so."""
        self.unserved = why
        self._synced.set()

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def __len__(self) -> int:
        return len(self._podgroups)
