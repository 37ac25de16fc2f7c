"""Volcano ``scheduling.volcano.sh/v1beta1``: Queues, and PodGroups (``spec.queue``, ``status.phase``) whose
pods name them by the group-name annotation; deserved by Volcano's own rules.

proportion (the default plugin): only queues with jobs take part. Each round, every queue not yet met
gets ``remaining * weight / sum of weights`` added to its deserved, capped per resource by its real capability
(the cluster less every other queue's guarantee, within ``spec.capability``) and by its request
(allocated + pending); it is met when the request fits or its deserved stopped growing; then deserved is
raised to its guarantee. Rounds end when nothing remains or nothing changed. capacity (when the
scheduler configuration enables that plugin instead): deserved as ``spec.deserved`` gives it.
The queue's ``share`` is, over resources, the largest allocated / deserved (1 when deserved is 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from .cluster import QueueMember, QueueReading, created_at
from .lending import lend_among_siblings
from .model import RESOURCES, Amount, Pending, Queue, QueueModel, gangweb_share

GROUP = "scheduling.volcano.sh"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
DEFAULT_QUEUE = "default"
CONFIG_MAP = "volcano-scheduler-configmap"
INF = float("inf")


def _vector(reading: QueueReading, values: Any, where: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    if not isinstance(values, Mapping):
        return out
    for name, quantity in values.items():
        key = reading.resource_key(str(name))
        if key is None:
            continue
        try:
            out[key] = out.get(key, Fraction(0)) + reading.amount(str(name), quantity)
        except ValueError as exc:
            raise ValueError(f"{where}.{name}: {exc}") from None
    return out


def capacity_plugin(reading: QueueReading) -> bool:
    """Whether the scheduler configuration enables ``capacity`` (else proportion decides deserved)."""
    for obj in reading.objects("", "ConfigMap"):
        if (obj.get("metadata") or {}).get("name") != CONFIG_MAP:
            continue
        text = " ".join(str(v) for v in (obj.get("data") or {}).values())
        return "name: capacity" in text
    return False


def proportion(
    total: Mapping[str, Amount],
    attrs: Mapping[str, dict[str, Any]],
) -> dict[str, dict[str, Fraction]]:
    """Volcano's proportion plugin: each queue's deserved (``attrs``: weight, request, guarantee,
    capability per queue, in the model's resources)."""
    total_guarantee = {
        r: sum((a["guarantee"].get(r, 0) for a in attrs.values()), Fraction(0)) for r in RESOURCES
    }
    deserved = {name: {r: Fraction(0) for r in RESOURCES} for name in attrs}
    real_cap: dict[str, dict[str, float | Fraction]] = {}
    for name, a in attrs.items():
        cap = {
            r: Fraction(total.get(r, 0)) - total_guarantee[r] + a["guarantee"].get(r, 0) for r in RESOURCES
        }
        given = a.get("capability")
        if given:
            cap = {r: (min(cap[r], given[r]) if given.get(r, 0) > 0 else cap[r]) for r in RESOURCES}
        real_cap[name] = cap
    remaining = {r: Fraction(total.get(r, 0)) for r in RESOURCES}
    met: set[str] = set()
    while True:
        total_weight = sum(a["weight"] for n, a in attrs.items() if n not in met)
        if total_weight == 0:
            break
        old_remaining = dict(remaining)
        increased = {r: Fraction(0) for r in RESOURCES}
        decreased = {r: Fraction(0) for r in RESOURCES}
        for name in sorted(attrs):
            if name in met:
                continue
            a = attrs[name]
            old = dict(deserved[name])
            share = Fraction(a["weight"], total_weight)
            new = {r: old[r] + remaining[r] * share for r in RESOURCES}
            new = {r: min(new[r], real_cap[name][r]) for r in RESOURCES}
            new = {r: min(new[r], a["request"].get(r, Fraction(0))) for r in RESOURCES}
            if all(a["request"].get(r, 0) <= new[r] for r in RESOURCES) or new == old:
                met.add(name)
            new = {r: max(new[r], a["guarantee"].get(r, Fraction(0))) for r in RESOURCES}
            deserved[name] = new
            for r in RESOURCES:
                if new[r] > old[r]:
                    increased[r] += new[r] - old[r]
                else:
                    decreased[r] += old[r] - new[r]
        remaining = {r: remaining[r] - increased[r] + decreased[r] for r in RESOURCES}
        if all(v <= 0 for v in remaining.values()) or remaining == old_remaining:
            break
    return deserved


def volcano_share(allocated: Mapping[str, Amount], deserved: Mapping[str, Amount]) -> float:
    """``updateShare``: the largest allocated / deserved (allocated without deserved: 1)."""
    best = Fraction(0)
    for r in RESOURCES:
        want, have = Fraction(deserved.get(r, 0)), Fraction(allocated.get(r, 0))
        value = (have / want) if want else (Fraction(1) if have else Fraction(0))
        best = max(best, value)
    return round(float(best), 4)


def read(reading: QueueReading, model: QueueModel) -> None:
    queue_objects = reading.objects(GROUP, "Queue")
    if not queue_objects:
        return
    specs: dict[str, Mapping[str, Any]] = {}
    for obj in queue_objects:
        specs[str((obj.get("metadata") or {}).get("name"))] = obj.get("spec") or {}
    groups: dict[str, Mapping[str, Any]] = {}
    for obj in reading.objects(GROUP, "PodGroup"):
        meta = obj.get("metadata") or {}
        groups[f"{meta.get('namespace')}/{meta.get('name')}"] = obj
    members: dict[str, list[QueueMember]] = {}
    for pod in reading.pods:
        name = pod.annotations.get(GROUP_ANNOTATION)
        if name and pod.active:
            members.setdefault(f"{pod.namespace}/{name}", []).append(pod)
    allocated: dict[str, dict[str, Fraction]] = {n: {} for n in specs}
    request: dict[str, dict[str, Fraction]] = {n: {} for n in specs}
    jobs: dict[str, list[str]] = {}
    waiting: dict[str, list[tuple[tuple, str, dict]]] = {}
    for key, obj in groups.items():
        queue = str((obj.get("spec") or {}).get("queue") or DEFAULT_QUEUE)
        if queue not in specs:
            model.warnings.append(f"Volcano PodGroup {key}: queue {queue} does not exist")
            continue
        jobs.setdefault(queue, []).append(key)
        model.gangs[key] = ("volcano", queue)
        pending_req: dict[str, Fraction] = {}
        for pod in members.get(key, ()):
            model.place(pod, "volcano", queue)
            for r in RESOURCES:
                request[queue][r] = request[queue].get(r, Fraction(0)) + pod.requests[r]
                if pod.bound:
                    allocated[queue][r] = allocated[queue].get(r, Fraction(0)) + pod.requests[r]
                else:
                    pending_req[r] = pending_req.get(r, Fraction(0)) + pod.requests[r]
        phase = (obj.get("status") or {}).get("phase") or "Pending"
        if phase in ("Pending", "Inqueue") or (pending_req and phase != "Running"):
            priority = 0
            waiting.setdefault(queue, []).append(((-priority, created_at(obj), key), key, pending_req))
    use_capacity = capacity_plugin(reading)
    attrs = {}
    for name in jobs:
        spec = specs[name]
        attrs[name] = {
            "weight": int(spec.get("weight") or 1),
            "request": request[name],
            "guarantee": _vector(
                reading,
                (spec.get("guarantee") or {}).get("resource"),
                f"Queue {name}: spec.guarantee.resource",
            ),
            "capability": _vector(reading, spec.get("capability"), f"Queue {name}: spec.capability"),
        }
    if use_capacity:
        deserved = {n: _vector(reading, specs[n].get("deserved"), f"Queue {n}: spec.deserved") for n in specs}
    else:
        deserved = proportion(reading.total, attrs)
    queues: dict[str, Queue] = {}
    for name in sorted(specs):
        spec = specs[name]
        queue = Queue("volcano", "Queue", name, spec.get("parent") or None, float(spec.get("weight") or 1))
        capability = _vector(reading, spec.get("capability"), f"Queue {name}: spec.capability")
        mine = deserved.get(name, {})
        for r in RESOURCES:
            f = queue.figures(r)
            f.guaranteed = mine.get(r, Fraction(0))
            f.limit = capability.get(r)
            f.used = allocated[name].get(r, Fraction(0))
            f.borrowed = max(Fraction(0), f.used - f.guaranteed)
            bound = capability.get(r)
            queue.headroom[r] = None if bound is None else max(Fraction(0), bound - f.used)
        queue.share = {
            "plugin": "capacity" if use_capacity else "proportion",
            "deserved": {
                r: float(mine.get(r, 0)) if r != "cpu" else float(Fraction(mine.get(r, 0)) / 1000)
                for r in RESOURCES
            },
            "share": volcano_share(allocated[name], mine),
        }
        for position, (_, key, req) in enumerate(sorted(waiting.get(name, [])), start=1):
            queue.pending.append(Pending(key, position, key.split("/", 1)[0], req))
        queue.namespaces = {key.split("/", 1)[0] for key in jobs.get(name, [])}
        queues[name] = queue
    lend_among_siblings(queues, model, "volcano", reading.total)
    for queue in queues.values():
        queue.share["gangweb"] = gangweb_share(queue)
    model.queues.extend(queues.values())
