"""The lost-work budget as the engine sees it: what each namespace's (and queue's) victims may still lose.

The pipeline sums what preemption took in the rolling hour from the ledger and hands the engine the rest
(``Snapshot.with_lost_work``); ``entry.plan`` keeps every plan within it. A pool with allowance left may
take a plan whose last unit goes past it (so a unit larger than the whole cap stays preemptable once an
hour); a pool with none left takes only units that lose nothing. Over any rolling hour the cap is thus
exceeded by at most one unit's lost work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .contract import Victim


NAMESPACE_POOL = "lost-work-budget"


def namespace_pool(namespace: str) -> str:
    """``NAMESPACE/lost-work-budget``: shaped like an object key, so an answer for a reader who does not
    see the namespace hides it like any other name (gangweb/clusterview/redact.py)."""
    return f"{namespace}/{NAMESPACE_POOL}"


def queue_pool(queue: str) -> str:
    return f"queue {queue}"


@dataclass(frozen=True)
class Allowance:
    """GPU-seconds of work the victims of each pool may still lose this rolling hour: a namespace's
    (``namespaces``, else ``default``; None: no cap) and a queue's (``queues``; a queue not named has no
    cap). ``queue_of`` names the queue of a pod (``namespace/name``) where a queue manager gives one."""

    default: float | None = None
    namespaces: Mapping[str, float] = field(default_factory=dict)
    queues: Mapping[str, float] = field(default_factory=dict)
    queue_of: Mapping[str, str] = field(default_factory=dict)

    def left(self, pool: str) -> float:
        if pool.startswith("queue "):
            return self.queues[pool.removeprefix("queue ")]
        left = self.namespaces.get(pool.removesuffix(f"/{NAMESPACE_POOL}"), self.default)
        assert left is not None, pool
        return left

    def pools_of(self, namespace: str, pods: Iterable[str]) -> list[str]:
        """The capped pools a unit of these pods draws on: its namespace's, and its queues'."""
        capped = namespace in self.namespaces or self.default is not None
        pools = [namespace_pool(namespace)] if capped else []
        for queue in sorted({self.queue_of[p] for p in pods if p in self.queue_of}):
            if queue in self.queues:
                pools.append(queue_pool(queue))
        return pools

    def overdrawn(self, victims: Iterable[Victim]) -> dict[str, list[Victim]]:
        """The pools a plan's victims would overdraw, each with its victims (largest loss first).

        A pool's victims losing ``L_1 >= ... >= L_k`` fit an allowance ``A`` when ``sum(L) <= A``, or
        when ``A > 0`` and ``sum(L) - L_1 < A`` (only the last unit goes past it)."""
        charged: dict[str, list[Victim]] = {}
        for victim in victims:
            for pool in self.pools_of(victim.namespace, victim.pods):
                charged.setdefault(pool, []).append(victim)
        out = {}
        for pool, members in charged.items():
            members.sort(key=lambda v: (-v.lost_gpu_seconds, v.namespace, v.name))
            total, largest, left = (
                sum(v.lost_gpu_seconds for v in members),
                members[0].lost_gpu_seconds,
                self.left(pool),
            )
            if total <= left or (left > 0 and total - largest < left):
                continue
            out[pool] = members
        return out
