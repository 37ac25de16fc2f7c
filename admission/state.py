"""What this webhook replica has learned about gangs: PodGroups and the first members it admitted.

The validating webhook compares a new member with its PodGroup and its siblings. It cannot ask the API
server (no calls in the request path), so it remembers what passes through admission: PodGroup
writes and admitted pods. The memory is bounded (least recently used gangs go first) and a member
record expires ``ttl`` seconds after the gang's first member was admitted, or when the gang's owner
changes (a Job recreated under the same name), so a stale record can never block a new workload for
long; the next member then becomes the one its siblings are compared with. A replica that has not seen a gang
simply has nothing to compare against and allows the pod.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

GangKey = tuple[str, str]  # (namespace, PodGroup name)


class MemberSignature(msgspec.Struct, frozen=True, gc=False):
    """The fields every member of one gang must share, and the resources (GPU shape) they should share."""

    priority: int | None
    priority_class: str
    scheduler_name: str
    resources: tuple  # admission.controllers.requested_resources
    owner_uid: str
    pod: str  # for messages: the name (or generateName) of the pod that set the signature


@dataclass(frozen=True)
class PodGroupFacts:
    priority: int | None
    priority_class: str


class GangIndex:
    def __init__(self, max_gangs: int = 50_000, ttl: float = 600.0, clock: Callable[[], float] = time.monotonic):
        self.max_gangs = max_gangs
        self.ttl = ttl
        self.clock = clock
        self._members: OrderedDict[GangKey, tuple[float, MemberSignature]] = OrderedDict()
        self._podgroups: OrderedDict[GangKey, PodGroupFacts] = OrderedDict()
        # Django may serve views from several threads; the asyncio server uses one.
        self._lock = threading.Lock()

    def lookup(self, key: GangKey, owner_uid: str) -> tuple[PodGroupFacts | None, MemberSignature | None]:
        """What a new member of gang ``key`` (owned by ``owner_uid``) is compared with: the gang's
        PodGroup, and the first member admitted (unless expired or of another owner)."""
        with self._lock:
            podgroup = self._podgroups.get(key)
            entry = self._members.get(key)
            if entry is None:
                return podgroup, None
            seen_at, signature = entry
            if self.clock() - seen_at > self.ttl or signature.owner_uid != owner_uid:
                del self._members[key]
                return podgroup, None
            self._members.move_to_end(key)
            return podgroup, signature

    def remember_member(self, key: GangKey, signature: MemberSignature) -> None:
        with self._lock:
            entry = self._members.get(key)
            now = self.clock()
            # Keep the first member's signature while it is fresh: it is what siblings must match.
            if entry is not None and entry[1].owner_uid == signature.owner_uid and now - entry[0] <= self.ttl:
                self._members.move_to_end(key)
                return
            self._members[key] = (now, signature)
            self._members.move_to_end(key)
            while len(self._members) > self.max_gangs:
                self._members.popitem(last=False)

    def remember_podgroup(self, key: GangKey, podgroup: dict[str, Any]) -> None:
        spec = podgroup.get("spec") if isinstance(podgroup.get("spec"), dict) else {}
        priority = spec.get("priority")
        priority_class = spec.get("priorityClassName")
        facts = PodGroupFacts(
            priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
            priority_class=priority_class if isinstance(priority_class, str) else "",
        )
        with self._lock:
            self._podgroups[key] = facts
            self._podgroups.move_to_end(key)
            while len(self._podgroups) > self.max_gangs:
                self._podgroups.popitem(last=False)

    def forget_podgroup(self, key: GangKey) -> None:
        with self._lock:
            self._podgroups.pop(key, None)
            self._members.pop(key, None)
