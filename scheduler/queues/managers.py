"""The queue managers gangweb knows, and which of them it may take victims from when told to
(``GANGWEB_QUEUE_VICTIMS``; docs/queues.md "Never fight a queue manager"). Light: read by the settings.

Volcano and YuniKorn place pods and evict them like any scheduler: gangweb may evict theirs when allowed.
Kueue's units are taken only through their Workload, never pod by pod; gangweb does not act on Workloads,
so they stay out. KAI-Scheduler reclaims again on its next cycle whatever gangweb frees: advisory only.
"""

from __future__ import annotations

from collections.abc import Iterable

SYSTEMS = ("kueue", "volcano", "kai", "yunikorn")
ACTS = frozenset({"volcano", "yunikorn"})
NEVER = {
    "kueue": "Kueue's units are taken only through their Workload, which gangweb does not act on",
    "kai": "KAI-Scheduler reclaims by itself: gangweb is advisory only",
}


def parse_allowed(values: Iterable[str]) -> frozenset[str]:
    """The systems gangweb may take victims from; ValueError for one that cannot be allowed."""
    allowed = set()
    for value in values:
        name = value.strip().lower()
        if not name:
            continue
        if name in NEVER:
            raise ValueError(f"{name} cannot be allowed: {NEVER[name]}")
        if name not in ACTS:
            raise ValueError(f"unknown queue manager {name!r} (may be allowed: {', '.join(sorted(ACTS))})")
        allowed.add(name)
    return frozenset(allowed)
