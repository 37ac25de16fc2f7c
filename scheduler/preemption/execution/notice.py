"""Preempt with notice: tell each victim unit before it is evicted, and see when it has saved its work.

The notice a victim sees, through the API it already watches (docs/design.md "Notice"):
- on a PodGroup unit, the 1.37 ``DisruptionTarget`` status condition (``True``, reason ``PreemptionNotice``,
  the deadline in its message) and the annotation ``gangweb.io/preemption-deadline`` (RFC 3339);
- on a pod unit (a pod of a ``single`` PodGroup, or in none) and a CompositePodGroup unit, the annotation
  only: a pod's ``DisruptionTarget`` condition means it is being evicted now (the Job controller's pod
  failure policies read it so), and the 1.37 CompositePodGroup has no such condition.
A unit has saved its work once its ``gangweb.io/last-checkpoint`` annotation (RFC 3339) is later than the
notice. Withdrawing removes the annotation and sets the condition ``False`` (reason ``PreemptionWithdrawn``);
so do the evictions once a unit's pods are all evicted (reason ``PreemptionCompleted``).
Every write here is idempotent: telling a unit twice carries the same deadline.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from scheduler.cluster import NOTICE_DEADLINE_ANNOTATION, Cluster, KubeObject
from scheduler.engine.checkpoints import CHECKPOINT_ANNOTATION, last_checkpoint, parse_rfc3339
from scheduler.preemption.models import Eviction, Plan
from scheduler.preemption.runtime import notice_seconds_for

logger = logging.getLogger(__name__)

DISRUPTION_TARGET = "DisruptionTarget"
NOTICE_REASON, WITHDRAWN_REASON = "PreemptionNotice", "PreemptionWithdrawn"
EVICTED_REASON = "PreemptionCompleted"
DEADLINE_ANNOTATION = NOTICE_DEADLINE_ANNOTATION
# The API version of each kind of victim unit (scheduler/engine/victims.py).
API_VERSIONS = {
    "Pod": "v1",
    "PodGroup": "scheduling.k8s.io/v1beta1",
    "CompositePodGroup": "scheduling.k8s.io/v1alpha3",
}


@dataclass(frozen=True)
class Unit:
    """One victim unit as the ledger names it (``Kind namespace/name``)."""

    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, victim_unit: str) -> Unit:
        kind, _, key = victim_unit.partition(" ")
        namespace, _, name = key.partition("/")
        return cls(kind, namespace, name)

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class Seen:
    """A unit as read now: whether it carries the notice, and its last checkpoint (None: never said)."""

    told: bool
    checkpoint: datetime | None
    gone: bool = False


def units_of(rows: list[Eviction]) -> list[Unit]:
    return sorted({Unit.of(r.victim_unit) for r in rows}, key=str)


def seconds_for(rows: list[Eviction]) -> int:
    """The plan's notice: the longest any of its victims' namespaces asks for (0: evict at once)."""
    return max((notice_seconds_for(r.namespace) for r in rows), default=0)


def rfc3339(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _object(cluster: Cluster, unit: Unit) -> KubeObject | None:
    if unit.kind == "Pod":
        return cluster.get_pod(unit.namespace, unit.name)
    return cluster.get_object(API_VERSIONS[unit.kind], unit.kind, unit.namespace, unit.name)


def _api_version(unit: Unit) -> str:
    return API_VERSIONS[unit.kind]


def tell(cluster: Cluster, plan: Plan, units: list[Unit]) -> None:
    """Put the notice on every unit (a failed write is logged; the next look at the notice repeats it)."""
    assert plan.notice_deadline is not None
    deadline = rfc3339(plan.notice_deadline)
    message = (
        f"gangweb preempts this {'{kind}'} for PodGroup {plan.request.podgroup} (plan {plan.pk}) at {deadline} "
        f"at the latest, sooner once every victim has saved a checkpoint ({CHECKPOINT_ANNOTATION})"
    )
    for unit in units:
        try:
            cluster.annotate(
                _api_version(unit), unit.kind, unit.namespace, unit.name, {DEADLINE_ANNOTATION: deadline}
            )
            if unit.kind == "PodGroup":
                cluster.set_podgroup_condition(
                    unit.namespace,
                    unit.name,
                    DISRUPTION_TARGET,
                    "True",
                    NOTICE_REASON,
                    message.replace("{kind}", unit.kind),
                )
        except Exception as exc:  # told on the next look
            logger.warning("could not give the notice", extra={"unit": str(unit), "error": str(exc)})


def untell(cluster: Cluster, plan: Plan, units: list[Unit], why: str) -> None:
    """Take the notice back from every unit (best effort: a unit gone needs nothing)."""
    _end(cluster, units, WITHDRAWN_REASON, f"gangweb withdrew its notice (plan {plan.pk}): {why}")


def clear(cluster: Cluster, plan: Plan, units: list[Unit]) -> None:
    """End the notice on every unit whose pods were evicted, so that it does not read as a notice still
    running (best effort; a pod unit is gone with its eviction and needs nothing)."""
    message = f"gangweb evicted this unit's pods for PodGroup {plan.request.podgroup} (plan {plan.pk})"
    _end(cluster, [u for u in units if u.kind != "Pod"], EVICTED_REASON, message)


def _end(cluster: Cluster, units: list[Unit], reason: str, message: str) -> None:
    """The deadline annotation removed and, on a PodGroup, ``DisruptionTarget`` set ``False``."""
    for unit in units:
        try:
            cluster.annotate(
                _api_version(unit), unit.kind, unit.namespace, unit.name, {DEADLINE_ANNOTATION: None}
            )
            if unit.kind == "PodGroup":
                cluster.set_podgroup_condition(
                    unit.namespace, unit.name, DISRUPTION_TARGET, "False", reason, message
                )
        except Exception as exc:
            logger.warning("could not end the notice", extra={"unit": str(unit), "error": str(exc)})


def look(cluster: Cluster, units: list[Unit]) -> dict[Unit, Seen]:
    """Each unit read afresh by name: does it carry the notice, when did it last save."""
    seen = {}
    for unit in units:
        obj = _object(cluster, unit)
        if obj is None:
            seen[unit] = Seen(told=True, checkpoint=None, gone=True)
            continue
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        seen[unit] = Seen(
            told=DEADLINE_ANNOTATION in annotations,
            checkpoint=last_checkpoint(annotations),
        )
    return seen


def planned_notice(victims: list[dict], objects: list[KubeObject]) -> dict | None:
    """The notice a plan's victims would get (``gang plan``'s ``notice``): the seconds their namespaces ask
    for, and the deadline of a notice the snapshot shows running on them (null when none); None when there
    is neither."""
    if not victims:
        return None
    seconds = max(notice_seconds_for(str(v.get("namespace") or "")) for v in victims)
    wanted = {(str(v.get("kind", "Pod")), f"{v.get('namespace')}/{v.get('name')}") for v in victims}
    running = [
        parsed
        for obj in objects
        if (
            obj.get("kind"),
            f"{(obj.get('metadata') or {}).get('namespace')}/{(obj.get('metadata') or {}).get('name')}",
        )
        in wanted
        and (
            parsed := parse_rfc3339(
                ((obj.get("metadata") or {}).get("annotations") or {}).get(DEADLINE_ANNOTATION)
            )
        )
    ]
    if not seconds and not running:
        return None
    return {"seconds": seconds, "deadline": rfc3339(max(running)) if running else None}


def saved(seen: Seen, given_at: datetime) -> bool:
    """The unit has nothing left to lose: it saved after the notice, or it is gone already."""
    # Checkpoint times are often whole seconds: one written in the notice's second counts.
    return seen.gone or (seen.checkpoint is not None and seen.checkpoint >= given_at.replace(microsecond=0))
