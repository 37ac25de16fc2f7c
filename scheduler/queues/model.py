"""The read model's types: one ``Queue`` per system and queue, with per-resource figures.

Amounts are exact (``int`` or ``Fraction``) in base units, cpu in millicores; ``to_dict`` gives the
``gang queues`` contract (docs/queues.md): cpu in cores, memory in bytes, GPUs in devices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.engine.gangkey import GangKey

    from .cluster import QueueMember

GPU, CPU, MEMORY = "gpu", "cpu", "memory"
RESOURCES = (GPU, CPU, MEMORY)
SYSTEMS = ("kueue", "volcano", "kai", "yunikorn")
Amount = int | Fraction


@dataclass
class Figures:
    """One resource of one queue. ``limit`` None: no limit the system enforces."""

    guaranteed: Amount = 0
    limit: Amount | None = None
    used: Amount = 0
    borrowed: Amount = 0
    lent: Amount = 0


@dataclass
class Pending:
    """A gang waiting in the queue: its group (``NS/NAME``) and its place in the system's order (1 first)."""

    pod_group: str
    position: int | None
    namespace: str
    requests: dict[str, Amount] = field(default_factory=dict)
    workload: str | None = None  # Kueue: the Workload that waits


@dataclass
class Queue:
    system: str
    kind: str
    name: str
    parent: str | None = None
    weight: float | None = None
    resources: dict[str, Figures] = field(default_factory=dict)
    share: dict[str, Any] = field(default_factory=dict)
    pending: list[Pending] = field(default_factory=list)
    # The namespaces whose gangs run or wait in it (a LocalQueue: its own): who may see it (docs/queues.md).
    namespaces: set[str] = field(default_factory=set)
    namespace: str | None = None
    # What the system would still admit into it now, per resource (None: no bound); blockers.py reads it.
    headroom: dict[str, Amount | None] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.system, self.name)

    def figures(self, resource: str) -> Figures:
        return self.resources.setdefault(resource, Figures())

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "kind": self.kind,
            "name": self.name,
            "parent": self.parent,
            "weight": self.weight,
            "resources": {
                name: {
                    "guaranteed": number(name, f.guaranteed),
                    "limit": None if f.limit is None else number(name, f.limit),
                    "used": number(name, f.used),
                    "borrowed": number(name, f.borrowed),
                    "lent": number(name, f.lent),
                }
                for name, f in sorted(self.resources.items(), key=lambda item: RESOURCES.index(item[0]))
            },
            "share": dict(self.share),
            "pending": [{"podGroup": p.pod_group, "position": p.position} for p in self.pending],
        }


def number(resource: str, amount: Amount) -> int | float:
    """An amount as the contract prints it: cpu in cores, the rest in base units; whole numbers as int."""
    value = Fraction(amount) / 1000 if resource == CPU else Fraction(amount)
    if value.denominator == 1:
        return int(value)
    return round(float(value), 3)


def ratio(part: Amount, whole: Amount) -> float | None:
    """``part / whole`` rounded for people; None when ``whole`` is zero."""
    return round(float(Fraction(part) / Fraction(whole)), 4) if whole else None


def gangweb_share(queue: Queue) -> float | None:
    """gangweb's one figure across systems: the largest used / guaranteed over the resources the queue is
    guaranteed (docs/queues.md); None when it is guaranteed nothing."""
    shares = [
        Fraction(f.used) / Fraction(f.guaranteed)
        for f in queue.resources.values()
        if f.guaranteed and f.guaranteed > 0
    ]
    return round(float(max(shares)), 4) if shares else None


@dataclass
class QueueModel:
    """Every queue of every system found, in a stable order (system, then tree order)."""

    queues: list[Queue] = field(default_factory=list)
    # Per system, per parent ("" for the top), per resource: what the group's own pool lent and what the
    # group borrowed from above (lending.py), for Σ lent = Σ borrowed.
    pools: dict[tuple[str, str], dict[str, dict[str, Amount]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # The queue each gang runs or waits in, (system, queue name), by the gang's key as the GPU map names it
    # (its PodGroup's NS/NAME, else the pod's own): what the idle figure adds up per queue.
    gangs: dict[str, tuple[str, str]] = field(default_factory=dict)

    def place(self, pod: QueueMember, system: str, queue: str) -> None:
        """Say that ``pod``'s gang runs or waits in ``queue`` (the first queue said wins)."""
        self.gangs.setdefault(pod.group or pod.key, (system, queue))

    def queue_of(self, gang_key: GangKey) -> tuple[Queue | None, Pending | None]:
        """The queue ``gang_key`` waits in (not a Kueue LocalQueue: its ClusterQueue holds the quota) and its
        entry there; (None, None) when it waits in none."""
        if self._pending_index is None:
            self._pending_index = {
                p.pod_group: (q, p) for q in self.queues if q.kind != "LocalQueue" for p in q.pending
            }
        return self._pending_index.get(gang_key, (None, None))

    _pending_index: dict[str, tuple[Queue, Pending]] | None = field(default=None, repr=False, compare=False)

    def find(self, system: str, name: str) -> Queue | None:
        for queue in self.queues:
            if queue.system == system and queue.name == name:
                return queue
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"queues": [q.to_dict() for q in self.queues]}
