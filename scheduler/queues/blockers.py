"""Why a gang waits: one dominant blocker, a stable code and a sentence with numbers.

Checked in this order, the first that holds is the blocker: ``configuration`` (the queue the gang names does
not exist), ``quorum`` (fewer pods than minCount exist), ``quota`` (its queue cannot take what it asks, or the
queue manager holds it back: Kueue's admission gate), then what the engine's plan says: ``dra``,
``topology``, ``capacity``. A quota wait is never reported as a capacity wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.engine import Plan, Snapshot
from scheduler.engine.gangkey import GangKey

from .cluster import QueueReading
from .model import CPU, GPU, RESOURCES, Queue, QueueModel, number

CODES = {
    "configuration": "the queue the gang names does not exist",
    "quorum": "fewer pods exist than the group's minCount",
    "quota": "its queue cannot take what the gang asks now (or the queue manager holds it back)",
    "dra": "a device claim of the gang cannot be allocated",
    "topology": "its topology constraint cannot be met",
    "capacity": "the cluster has too little free room, even with the victims gangweb may take",
}
KUEUE_GATE = "kueue.x-k8s.io/admission"
_WORDS = {GPU: "GPUs", CPU: "cpu", "memory": "bytes of memory"}
GUARANTEE = {"kueue": "nominal", "volcano": "deserved", "kai": "quota", "yunikorn": "guaranteed"}


@dataclass(frozen=True)
class Blocker:
    code: str
    reason: str
    numbers: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "reason": self.reason, "numbers": dict(self.numbers)}


def _amount(resource: str, value) -> str:
    shown = number(resource, value)
    return f"{shown} {_WORDS[resource]}"


def _quota(queue: Queue, need: dict[str, Any], gated: bool) -> Blocker | None:
    for r in RESOURCES:
        want = Fraction(need.get(r, 0))
        room = queue.headroom.get(r)
        if not want or room is None or want <= room:
            continue
        f = queue.figures(r)
        free = max(Fraction(0), Fraction(f.guaranteed) - Fraction(f.used) - Fraction(f.lent))
        parts = [
            f"{queue.kind} {queue.name}: needs {_amount(r, want)}",
            f"{number(r, free)} free under {GUARANTEE[queue.system]} {number(r, f.guaranteed)}",
        ]
        if f.lent:
            parts.append(f"{number(r, f.lent)} lent to other queues")
        if f.limit is not None and Fraction(f.used) >= Fraction(f.limit):
            parts.append("its limit reached")
        elif room > free:
            parts.append(f"{number(r, room - free)} more it could borrow")
        return Blocker(
            "quota",
            "; ".join(parts),
            {
                "system": queue.system,
                "queue": queue.name,
                "resource": r,
                "needs": number(r, want),
                "free": number(r, free),
                "guaranteed": number(r, f.guaranteed),
                "canTake": number(r, room),
            },
        )
    if gated:
        return Blocker(
            "quota",
            f"{queue.kind} {queue.name}: Kueue has not admitted it yet (its pods wait on the {KUEUE_GATE} gate)",
            {"system": queue.system, "queue": queue.name},
        )
    return None


class Waits:
    """Why each gang of one reading of the cluster waits: the queue model, the queue readers' reading and the
    engine's snapshot of the same objects, indexed once so that a list of thousands of gangs costs a lookup
    per gang."""

    def __init__(self, model: QueueModel, reading: QueueReading, snapshot: Snapshot) -> None:
        self.model, self.reading, self.snapshot = model, reading, snapshot
        self._gated = {pod.group for pod in reading.pods if pod.group and KUEUE_GATE in pod.gates}
        self._missing = [w for w in model.warnings if "does not exist" in w or "not configured" in w]

    def queue_side(self, gang_key: GangKey) -> Blocker | None:
        """What keeps ``gang_key`` waiting before any plan is read: configuration, quorum or quota."""
        for warning in self._missing:
            if gang_key in warning:
                return Blocker("configuration", warning, {})
        group = self.snapshot.groups.get(gang_key)
        members = self.snapshot.group_members.get(gang_key, [])
        if group is not None and group.min_count and len(members) < group.min_count:
            return Blocker(
                "quorum",
                f"PodGroup {gang_key}: {len(members)} of minCount {group.min_count} pods exist",
                {"pods": len(members), "minCount": group.min_count},
            )
        queue, pending = self.model.queue_of(gang_key)
        if queue is not None and pending is not None:
            return _quota(queue, pending.requests, gang_key in self._gated)
        return None

    def of(self, gang_key: GangKey, plan: Plan | None) -> Blocker | None:
        """The one thing that keeps ``gang_key`` waiting (None when nothing does: it fits or runs)."""
        found = self.queue_side(gang_key)
        if found is not None or plan is None or plan.feasible:
            return found
        return self._from_plan(gang_key, str(plan.why), plan.reason, str(plan.outcome))

    def of_outcome(self, gang_key: GangKey, outcome: str | None, reason: str) -> Blocker | None:
        """``of`` with the outcome and reason of a plan made before (the ledger's last plan of the gang)."""
        found = self.queue_side(gang_key)
        if found is not None or not outcome or not outcome.startswith("infeasible:"):
            return found
        return self._from_plan(gang_key, outcome.partition(":")[2], reason, outcome)

    def _from_plan(self, gang_key: GangKey, why: str, reason: str, outcome: str) -> Blocker:
        if why == "device-claim":
            return Blocker("dra", reason, {})
        if why == "topology":
            return Blocker("topology", reason, {})
        snapshot = self.snapshot
        members = snapshot.group_members.get(gang_key, [])
        pending = [i for i in members if snapshot.pod_node[i] < 0]
        need = int(snapshot.gpus(snapshot.pod_req[pending].sum(axis=0))) if pending else 0
        free = (
            int(snapshot.gpus(snapshot.free[snapshot.node_usable].sum(axis=0))) if len(snapshot.nodes) else 0
        )
        return Blocker(
            "capacity",
            f"needs {need} GPUs; {free} free in the cluster; {reason}",
            {"needs": need, "free": free, "outcome": outcome},
        )


def blocker_for(
    model: QueueModel, reading: QueueReading, snapshot: Snapshot, gang_key: GangKey, plan: Plan | None
) -> Blocker | None:
    """The one thing that keeps ``gang_key`` waiting (None when nothing does: it fits or runs)."""
    return Waits(model, reading, snapshot).of(gang_key, plan)


def with_blocker(plan_json: dict[str, Any], blocker: Blocker | None) -> dict[str, Any]:
    """The plan's JSON with ``blocker`` placed before ``outcome`` (the contract's last keys keep their order)."""
    out: dict[str, Any] = {}
    for key, value in plan_json.items():
        if key == "outcome":
            out["blocker"] = blocker.to_dict() if blocker is not None else None
        out[key] = value
    out.setdefault("blocker", blocker.to_dict() if blocker is not None else None)
    return out
