"""Apache YuniKorn: the queue configuration (ConfigMap ``yunikorn-configs``, key ``queues.yaml``: partitions
of queue trees with ``resources.guaranteed``/``max``) and the pods that name a queue (label ``queue`` or
annotation ``yunikorn.apache.org/queue``; else the namespace placement rule, else ``root.default``).

YuniKorn has no quota to borrow from: a queue above its guarantee uses what its siblings leave; borrowed
and lent follow gangweb's one rule (lending.py). Its own figure is the fair policy's usage ratio: the
largest used / guaranteed over the resources guaranteed.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import yaml

from .cluster import QueueReading
from .lending import lend_among_siblings
from .model import RESOURCES, Pending, Queue, QueueModel, gangweb_share

CONFIG_MAPS = ("yunikorn-configs", "yunikorn-defaults")
QUEUE_LABEL = "queue"
QUEUE_ANNOTATION = "yunikorn.apache.org/queue"
APP_ID_LABELS = ("applicationId", "yunikorn.apache.org/app-id")
SCHEDULER_NAME = "yunikorn"
PARTITION = "default"


def configuration(reading: QueueReading) -> Mapping[str, Any] | None:
    """The partition ``default`` of the queue configuration, if a ConfigMap holds one."""
    for wanted in CONFIG_MAPS:
        for obj in reading.objects("", "ConfigMap"):
            if (obj.get("metadata") or {}).get("name") != wanted:
                continue
            text = (obj.get("data") or {}).get("queues.yaml")
            if not text:
                continue
            try:
                config = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ValueError(f"ConfigMap {wanted}: queues.yaml: not valid YAML ({exc})") from None
            for partition in (config or {}).get("partitions") or []:
                if isinstance(partition, Mapping) and partition.get("name", PARTITION) == PARTITION:
                    return partition
    return None


def queue_of(
    labels: Mapping[str, str], annotations: Mapping[str, str], namespace: str, by_namespace: bool
) -> str:
    name = labels.get(QUEUE_LABEL) or annotations.get(QUEUE_ANNOTATION)
    if name:
        return name if name.startswith("root.") or name == "root" else f"root.{name}"
    return f"root.{namespace}" if by_namespace else "root.default"


def read(reading: QueueReading, model: QueueModel) -> None:
    partition = configuration(reading)
    if partition is None:
        return
    specs: dict[str, tuple[str | None, Mapping[str, Any]]] = {}

    def walk(items: Any, parent: str | None) -> None:
        for item in items or []:
            if not isinstance(item, Mapping) or not item.get("name"):
                continue
            name = str(item["name"]) if parent is None else f"{parent}.{item['name']}"
            specs[name] = (parent, item.get("resources") or {})
            walk(item.get("queues"), name)

    walk(partition.get("queues"), None)
    by_namespace = any(
        isinstance(rule, Mapping) and rule.get("name") == "tag" and rule.get("value") == "namespace"
        for rule in partition.get("placementrules") or []
    )
    used = {n: dict.fromkeys(RESOURCES, Fraction(0)) for n in specs}
    waiting: dict[str, dict[str, dict]] = {}
    namespaces: dict[str, set[str]] = {}
    for pod in reading.pods:
        if not pod.active or (pod.scheduler != SCHEDULER_NAME and QUEUE_LABEL not in pod.labels):
            continue
        queue = queue_of(pod.labels, pod.annotations, pod.namespace, by_namespace)
        if queue not in specs:
            model.warnings.append(f"YuniKorn pod {pod.key}: queue {queue} is not configured")
            continue
        namespaces.setdefault(queue, set()).add(pod.namespace)
        model.place(pod, "yunikorn", queue)
        if pod.bound:
            for r in RESOURCES:
                used[queue][r] += pod.requests[r]
            continue
        app = next((pod.labels[k] for k in APP_ID_LABELS if pod.labels.get(k)), pod.name)
        key = pod.group or f"{pod.namespace}/{app}"
        entry = waiting.setdefault(queue, {}).setdefault(key, {"requests": {}, "created": float("inf")})
        entry["created"] = min(entry["created"], pod.created if pod.created is not None else float("inf"))
        for r in RESOURCES:
            entry["requests"][r] = entry["requests"].get(r, 0) + pod.requests[r]
    for name in sorted(specs, key=lambda n: -n.count(".")):  # a parent uses what its children use
        parent = specs[name][0]
        if parent is not None:
            for r in RESOURCES:
                used[parent][r] += used[name][r]
    queues: dict[str, Queue] = {}
    for name in specs:
        parent, resources = specs[name]
        queue = Queue("yunikorn", "Queue", name, parent, None)
        guaranteed = _vector(reading, resources.get("guaranteed"), f"queue {name}: resources.guaranteed")
        maximum = _vector(reading, resources.get("max"), f"queue {name}: resources.max")
        for r in RESOURCES:
            f = queue.figures(r)
            f.guaranteed = guaranteed.get(r, Fraction(0))
            f.limit = maximum.get(r)
            f.used = used[name][r]
            f.borrowed = max(Fraction(0), f.used - f.guaranteed) if parent is not None else Fraction(0)
            queue.headroom[r] = None if f.limit is None else max(Fraction(0), f.limit - f.used)
        ratios = [Fraction(f.used) / Fraction(f.guaranteed) for f in queue.resources.values() if f.guaranteed]
        queue.share = {"usageRatio": round(float(max(ratios)), 4) if ratios else None}
        order = sorted(waiting.get(name, {}).items(), key=lambda item: (item[1]["created"], item[0]))
        queue.pending = [
            Pending(key, position, key.split("/", 1)[0], e["requests"])
            for position, (key, e) in enumerate(order, start=1)
        ]
        queue.namespaces = set(namespaces.get(name, set()))
        queues[name] = queue
    for name in sorted(queues, key=lambda n: -n.count(".")):
        parent = queues[name].parent
        if parent in queues:
            queues[parent].namespaces |= queues[name].namespaces
    lend_among_siblings(queues, model, "yunikorn", reading.total)
    for queue in queues.values():
        queue.share["gangweb"] = gangweb_share(queue)
    model.queues.extend(queues.values())


def _vector(reading: QueueReading, values: Any, where: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    if not isinstance(values, Mapping):
        return out
    for name, quantity in values.items():
        key = reading.resource_key(str(name))
        if key is None:
            continue
        try:
            out[key] = out.get(key, Fraction(0)) + reading.amount(
                "cpu" if name == "vcore" else str(name), quantity
            )
        except ValueError as exc:
            raise ValueError(f"{where}.{name}: {exc}") from None
    return out
