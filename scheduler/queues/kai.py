"""KAI-Scheduler ``scheduling.run.ai/v2`` Queues (a tree by ``spec.parentQueue``) and the pods and PodGroups
that name them; fair share by KAI's documented division (pkg/scheduler/plugins/proportion/resource_division).

Per resource, at each level of the tree, the parent's fair share (the cluster's total at the top) is
divided among siblings: first each gets its deserved quota (``-1``: all of it), no more than it can use
(its request, within its limit); the surplus then goes priority by priority (highest first), in rounds,
in proportion to the over-quota weights of the queues that still want more, each round's amount rounded
down per queue; what rounding left over goes one unit at a time to the queues left wanting most (then
the oldest). A queue's request is what its pods run and wait for; a parent's, its children's. KAI also
weighs historical usage when configured; without it (the default) the division is the one above.
Saturation is allocated / fair share. Quotas are in KAI's units: cpu millicores, memory megabytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .cluster import QueueMember, QueueReading, created_at
from .lending import lend_among_siblings
from .model import CPU, GPU, MEMORY, RESOURCES, Pending, Queue, QueueModel, gangweb_share, ratio

GROUP = "scheduling.run.ai"
QUEUE_LABEL = "kai.scheduler/queue"
POD_GROUP_ANNOTATION = "pod-group-name"
UNLIMITED = -1
_UNIT = {GPU: 1, CPU: 1, MEMORY: 10**6}  # KAI's units to the model's (cpu is millicores in both)


@dataclass
class Share:
    """One resource of one queue, as KAI's ResourceShare: deserved, limit, weight, request, fair share."""

    deserved: float
    max_allowed: float
    weight: float
    request: float
    fair_share: float = 0.0

    def requestable(self) -> float:
        return self.request if self.max_allowed == UNLIMITED else min(self.max_allowed, self.request)

    def satisfied(self) -> bool:
        return self.request <= self.fair_share or (
            self.max_allowed != UNLIMITED and self.max_allowed <= self.fair_share
        )

    def remaining_requested(self) -> float:
        return max(0.0, self.requestable() - self.fair_share)


@dataclass
class KaiQueue:
    name: str
    priority: int
    created: float
    shares: dict[str, Share] = field(default_factory=dict)


def divide(total: float, queues: list[KaiQueue], resource: str) -> float:
    """Set ``fair_share`` of ``resource`` for sibling ``queues`` out of ``total``; returns what is left."""
    remaining = total
    for queue in queues:  # deserved first
        share = queue.shares[resource]
        deserved = total if share.deserved == UNLIMITED else share.deserved
        amount = min(deserved, share.requestable())
        share.fair_share += amount
        remaining -= amount
    if remaining <= 0:
        return 0.0
    priorities = sorted({q.priority for q in queues}, reverse=True)
    left_over: dict[int, dict[str, tuple[float, KaiQueue]]] = {}
    for priority in priorities:
        group = [q for q in queues if q.priority == priority]
        remaining, left_over[priority] = _up_to_fair_share(remaining, group, resource)
    for priority in priorities:
        if remaining <= 0:
            break
        order = sorted(
            left_over[priority].values(), key=lambda item: (-item[0], item[1].created, item[1].name)
        )
        for _, queue in order:
            if remaining == 0:
                break
            give = min(1.0, remaining)
            queue.shares[resource].fair_share += give
            remaining -= give
    return remaining


def _up_to_fair_share(total: float, queues: list[KaiQueue], resource: str) -> tuple[float, dict]:
    left_over: dict[str, tuple[float, KaiQueue]] = {}
    while True:
        another_round = False
        this_round = total
        if len(queues) == 1:
            queues[0].shares[resource].fair_share += total
            return 0.0, left_over
        unsatisfied = [q for q in queues if not q.shares[resource].satisfied()]
        weights_total = sum(
            q.shares[resource].weight for q in queues if q.shares[resource].remaining_requested() > 0
        )
        if weights_total == 0:
            break
        # KAI's share weight is w + k*(w - historical usage), w the normalised over-quota weight; without
        # a usage history k cancels out once the weights are normalised again.
        weights = {q.name: max(0.0, q.shares[resource].weight / weights_total) for q in unsatisfied}
        weights_sum = sum(weights.values())
        if weights_sum == 0:
            break
        for queue in sorted(queues, key=lambda q: q.name):
            if total == 0:
                break
            share = queue.shares[resource]
            if share.satisfied():
                continue
            requested = share.remaining_requested()
            if share.weight == 0:
                continue
            fair = this_round * weights[queue.name] / weights_sum
            if requested <= fair:
                give = requested
                left_over.pop(queue.name, None)
            else:
                give = float(math.floor(fair)) if math.floor(fair) > 0 else 0.0
                if fair - give > 0:
                    left_over[queue.name] = (fair - give, queue)
            if give == 0:
                continue
            share.fair_share += give
            total -= give
            another_round = another_round or requested < fair
        if not another_round or total == 0:
            break
    return total, left_over


def _amount(value: Any, resource: str, where: str) -> float:
    if value is None:
        return UNLIMITED
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected a number, got {value!r}") from None
    return UNLIMITED if number < 0 else number * _UNIT[resource]


def read(reading: QueueReading, model: QueueModel) -> None:
    objects = reading.objects(GROUP, "Queue")
    if not objects:
        return
    specs = {str((o.get("metadata") or {}).get("name")): o for o in objects}
    groups: dict[str, Mapping[str, Any]] = {}
    for obj in reading.objects(GROUP, "PodGroup"):
        meta = obj.get("metadata") or {}
        groups[f"{meta.get('namespace')}/{meta.get('name')}"] = obj
    used: dict[str, dict[str, float]] = {n: dict.fromkeys(RESOURCES, 0.0) for n in specs}
    requested: dict[str, dict[str, float]] = {n: dict.fromkeys(RESOURCES, 0.0) for n in specs}
    waiting: dict[str, dict[str, dict]] = {}
    namespaces: dict[str, set[str]] = {}
    for pod in reading.pods:
        queue = _queue_of(pod, groups)
        if queue is None or not pod.active:
            continue
        if queue not in specs:
            model.warnings.append(f"KAI pod {pod.key}: queue {queue} does not exist")
            continue
        namespaces.setdefault(queue, set()).add(pod.namespace)
        model.place(pod, "kai", queue)
        group_name = pod.annotations.get(POD_GROUP_ANNOTATION)
        if group_name:  # KAI names a pod's group by annotation too
            model.gangs.setdefault(f"{pod.namespace}/{group_name}", ("kai", queue))
        for r in RESOURCES:
            requested[queue][r] += pod.requests[r]
            if pod.bound:
                used[queue][r] += pod.requests[r]
        if not pod.bound:
            name = pod.annotations.get(POD_GROUP_ANNOTATION)
            key = f"{pod.namespace}/{name}" if name else pod.key
            entry = waiting.setdefault(queue, {}).setdefault(key, {"requests": {}, "priority": pod.priority})
            created = created_at(groups[key]) if key in groups else (pod.created or float("inf"))
            entry["created"] = min(entry.get("created", float("inf")), created)
            for r in RESOURCES:
                entry["requests"][r] = entry["requests"].get(r, 0) + pod.requests[r]
    children: dict[str, list[str]] = {}
    for name, obj in specs.items():
        parent = (obj.get("spec") or {}).get("parentQueue") or ""
        if parent and parent not in specs:
            model.warnings.append(f"KAI Queue {name}: parent queue {parent} does not exist")
            parent = ""
        children.setdefault(parent, []).append(name)
    _sum_up("", children, requested, used)
    kai: dict[str, KaiQueue] = {}
    for name, obj in specs.items():
        spec = obj.get("spec") or {}
        resources = spec.get("resources") or {}
        queue = KaiQueue(name, int(spec.get("priority") or 0), created_at(obj))
        for r in RESOURCES:
            given = resources.get(r) or {}
            where = f"Queue {name}: spec.resources.{r}"
            queue.shares[r] = Share(
                _amount(given.get("quota", 0), r, f"{where}.quota"),
                _amount(given.get("limit", UNLIMITED), r, f"{where}.limit"),
                float(given.get("overQuotaWeight", 1) if given.get("overQuotaWeight") is not None else 1),
                requested[name][r],
            )
        kai[name] = queue
    for r in RESOURCES:
        _divide_tree("", float(reading.total.get(r, 0)), children, kai, r)
    queues: dict[str, Queue] = {}
    for name in _tree_order("", children):
        spec = specs[name].get("spec") or {}
        k = kai[name]
        queue = Queue("kai", "Queue", name, spec.get("parentQueue") or None, k.shares[GPU].weight)
        for r in RESOURCES:
            share = k.shares[r]
            f = queue.figures(r)
            parent_total = (
                kai[queue.parent].shares[r].fair_share if queue.parent in kai else reading.total.get(r, 0)
            )
            f.guaranteed = Fraction(parent_total if share.deserved == UNLIMITED else share.deserved)
            f.limit = None if share.max_allowed == UNLIMITED else Fraction(share.max_allowed)
            f.used = Fraction(used[name][r])
            f.borrowed = max(Fraction(0), f.used - f.guaranteed)
            # KAI's allocatable share: the larger of quota and fair share, within the limit.
            allocatable = max(Fraction(f.guaranteed), Fraction(share.fair_share))
            if f.limit is not None:
                allocatable = min(allocatable, f.limit)
            queue.headroom[r] = max(Fraction(0), allocatable - f.used)
        queue.share = {
            "priority": k.priority,
            "fairShare": {r: _out(r, k.shares[r].fair_share) for r in RESOURCES},
            "saturation": {
                r: ratio(Fraction(used[name][r]), Fraction(k.shares[r].fair_share)) for r in RESOURCES
            },
        }
        order = sorted(
            waiting.get(name, {}).items(),
            key=lambda item: (-item[1]["priority"], item[1]["created"], item[0]),
        )
        queue.pending = [
            Pending(key, position, key.split("/", 1)[0], entry["requests"])
            for position, (key, entry) in enumerate(order, start=1)
        ]
        queue.namespaces = set(namespaces.get(name, set()))
        queues[name] = queue
    for name in reversed(list(queues)):  # a parent is seen by its children's namespaces
        parent = queues[name].parent
        if parent in queues:
            queues[parent].namespaces |= queues[name].namespaces
    lend_among_siblings(queues, model, "kai", reading.total)
    for queue in queues.values():
        queue.share["gangweb"] = gangweb_share(queue)
    model.queues.extend(queues.values())


def _out(resource: str, value: float) -> float:
    return round(value / 1000, 3) if resource == CPU else round(value, 3)


def _queue_of(pod: QueueMember, groups: Mapping[str, Mapping[str, Any]]) -> str | None:
    name = pod.annotations.get(POD_GROUP_ANNOTATION)
    if name and f"{pod.namespace}/{name}" in groups:
        queue = (groups[f"{pod.namespace}/{name}"].get("spec") or {}).get("queue")
        if queue:
            return str(queue)
    return pod.labels.get(QUEUE_LABEL)


def _sum_up(parent: str, children: Mapping[str, list[str]], *tables: dict[str, dict[str, float]]) -> None:
    for child in children.get(parent, []):
        _sum_up(child, children, *tables)
        if parent:
            for table in tables:
                for r in RESOURCES:
                    table[parent][r] += table[child][r]


def _divide_tree(
    parent: str, total: float, children: Mapping[str, list[str]], kai: Mapping[str, KaiQueue], r: str
) -> None:
    siblings = [kai[n] for n in sorted(children.get(parent, []))]
    if not siblings:
        return
    divide(total, siblings, r)
    for queue in siblings:
        _divide_tree(queue.name, queue.shares[r].fair_share, children, kai, r)


def _tree_order(parent: str, children: Mapping[str, list[str]]) -> list[str]:
    out: list[str] = []
    for child in sorted(children.get(parent, [])):
        out.append(child)
        out += _tree_order(child, children)
    return out
