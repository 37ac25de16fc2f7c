"""gangweb's atomic preemption engine: a cluster snapshot in, a preemption plan out.

Pure Python (numpy for the per-node arithmetic): no Django, no Kubernetes client. Public API::

    from scheduler.engine import load_snapshot, parse_snapshot, plan, Snapshot, Plan, SnapshotError, POLICIES
    snap = load_snapshot("cluster.yaml")          # bounded: regular files, GANGWEB_SNAPSHOT_MAX_BYTES, YAML aliases
    documents = read_snapshot("cluster.yaml")     # the same reading, raw documents (for other readers: replay, kube)
    p = plan(snap, "team-a/train-0", policy="gangweb")
    p.to_dict()   # the docs/design.md ``gang plan`` JSON
    p.outcome     # an Outcome: Outcome.FITS, Outcome.PREEMPT, Outcome.NO_ROOM, ...

The names above are loaded on first use, so that a light module of the engine
(``scheduler.engine.resources.is_gpu``, ``scheduler.engine.typed_objects``) can be imported without
numpy, PyYAML and the policies.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import PodGroupNotFound, SnapshotError

if TYPE_CHECKING:
    from .contract import Plan, Victim
    from .entry import plan
    from .outcomes import Outcome
    from .policies import DEFAULT_POLICY, POLICIES
    from .reading import read_snapshot
    from .snapshot import DUMP_COMMAND, Snapshot, load_objects, load_snapshot, parse_snapshot

_HOMES = {
    "Plan": ".contract",
    "Victim": ".contract",
    "plan": ".entry",
    "Outcome": ".outcomes",
    "POLICIES": ".policies",
    "DEFAULT_POLICY": ".policies",
    "read_snapshot": ".reading",
    "DUMP_COMMAND": ".snapshot",
    "Snapshot": ".snapshot",
    "load_objects": ".snapshot",
    "load_snapshot": ".snapshot",
    "parse_snapshot": ".snapshot",
}

__all__ = [
    "DEFAULT_POLICY",
    "DUMP_COMMAND",
    "POLICIES",
    "Outcome",
    "Plan",
    "PodGroupNotFound",
    "Snapshot",
    "SnapshotError",
    "Victim",
    "load_objects",
    "load_snapshot",
    "parse_snapshot",
    "plan",
    "read_snapshot",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
