"""gangweb's atomic preemption engine: a cluster snapshot in, a preemption plan out.

Pure Python (numpy for the per-node arithmetic): no Django, no Kubernetes client. Public API::

    from scheduler.engine import load_snapshot, parse_snapshot, plan, Snapshot, Plan, SnapshotError, POLICIES
    snap = load_snapshot("cluster.yaml")          # bounded: regular files, GANGWEB_SNAPSHOT_MAX_BYTES, YAML aliases
    documents = read_snapshot("cluster.yaml")     # the same reading, raw documents (for other readers: replay, kube)
    p = plan(snap, "team-a/train-0", policy="gangweb")
    p.to_dict()   # the DESIGN.md ``gang plan`` JSON
"""

from .contract import Plan, Victim
from .entry import best_plan, can_shard, domain_shards, plan
from .errors import SnapshotError
from .policies import DEFAULT_POLICY, POLICIES
from .reading import read_snapshot
from .snapshot import Snapshot, load_snapshot, parse_snapshot

__all__ = ["load_snapshot", "read_snapshot", "parse_snapshot", "plan", "Snapshot", "Plan", "Victim", "SnapshotError",
           "POLICIES", "DEFAULT_POLICY", "can_shard", "domain_shards", "best_plan"]
