"""GPUs by namespace and priority tier: now (from the live cluster) and over time (samples).

A sample is taken every ``GANGWEB_USAGE_SAMPLE_SECONDS`` by the Celery beat task ``gangweb.sample_usage``
(``gangweb/tasks.py``, the samples' one writer) and kept six hours (``store.USAGE``); this module only reads. A reader sees its own namespaces by name;
every other namespace is added up into one row without a name, so the totals stay true.
"""

from __future__ import annotations

import time
from typing import Any

from gangweb.access.scope import Scope
from gangweb.api.v1.store import USAGE
from gangweb.clusterview.rows import ClusterView, cluster_view

NO_CLASS = "(no priority class)"


def _by_namespace_and_class(groups: list[dict[str, Any]]) -> dict[str, dict[str, list[int]]]:
    """``{namespace: {class: [placed GPUs, waiting GPUs, priority]}}``."""
    out: dict[str, dict[str, list[int]]] = {}
    for group in groups:
        cell = out.setdefault(group["namespace"], {}).setdefault(
            group["priorityClass"] or NO_CLASS, [0, 0, group["priority"]]
        )
        cell[0] += group["placedGpus"]
        cell[1] += group["gpus"] - group["placedGpus"]
    return out


def _rows(table: dict[str, dict[str, list[int]]], scope: Scope) -> list[dict[str, Any]]:
    rows, other = [], {}
    for namespace in sorted(table):
        for cls, (placed, waiting, priority) in sorted(table[namespace].items()):
            if scope.sees(namespace):
                rows.append(
                    {
                        "namespace": namespace,
                        "priorityClass": cls,
                        "priority": priority,
                        "gpus": placed,
                        "waitingGpus": waiting,
                        "otherNamespace": False,
                    }
                )
            else:
                cell = other.setdefault(cls, [0, 0, priority])
                cell[0] += placed
                cell[1] += waiting
    rows += [
        {
            "namespace": None,
            "priorityClass": cls,
            "priority": p,
            "gpus": placed,
            "waitingGpus": waiting,
            "otherNamespace": True,
        }
        for cls, (placed, waiting, p) in sorted(other.items())
    ]
    return rows


def sample(view: ClusterView | None = None) -> dict[str, Any]:
    """One sample of ``view`` (the cluster now by default), as stored by the beat task:
    ``{"at": epoch, "n": {ns: {class: [gpus, waiting, prio]}}}``."""
    view = view or cluster_view()
    return {"at": view.at, "n": _by_namespace_and_class(list(view.groups.values()))}


def usage(scope: Scope, *, points: int) -> dict[str, Any]:
    """Only reads: the samples' one writer is the beat task (a GET adds no point to the history)."""
    view = cluster_view()
    now = sample(view)
    rows = _rows(now["n"], scope)
    return {
        "at": _iso(now["at"]),
        "totalGpus": sum(n["gpus"] for n in view.nodes),
        "allocatedGpus": sum(n["allocatedGpus"] for n in view.nodes),
        "rows": rows,
        "history": [
            {"at": _iso(s["at"]), "rows": _rows(s.get("n") or {}, scope)} for s in USAGE.newest(points)
        ],
    }


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
