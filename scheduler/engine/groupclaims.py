"""Plans for gangs whose PodGroup-level claims (KEP-5729) need devices that lower-priority units hold.

The units whose claims free those devices (``devices.group_claim_needs``) are evicted first: the policy
plans on a *view* of the snapshot without them (their pods gone, their claims' devices free), and the
plan it finds gets them as victims too, its cost counted on the whole victim set. The view shares
everything else with the snapshot, which it never changes.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from .contract import Plan
from .evaluation import Problem
from .preemptor import Preemptor
from .victims import UnitIndex, victim_cost

if TYPE_CHECKING:
    from .devices import GroupClaims
    from .policies.base import PreemptionPolicy
    from .snapshot import Snapshot


def without_units(snapshot: Snapshot, unit_ids: list[int]) -> Snapshot:
    """The snapshot as it would be once these victim units are evicted and their claims released."""
    units = snapshot.units.units
    gone = sorted(p for u in unit_ids for p in units[u].pods)
    view = copy.copy(snapshot)
    view.cache = {}
    view.pod_node = snapshot.pod_node.copy()
    view.pod_node[gone] = -1
    view.bound = np.flatnonzero(view.pod_node >= 0)
    gone_set = set(gone)
    view.pods_by_node = [[p for p in pods if p not in gone_set] for pods in snapshot.pods_by_node]
    used = snapshot.used.copy()
    np.subtract.at(used, snapshot.pod_node[gone], snapshot.pod_req[gone])
    view.used, view.free = used, snapshot.alloc - used
    original = snapshot.devices
    released = set()
    for claim in {c.key: c for c in original.holder.values()}.values():
        pods = original.consumer_pods(claim)
        if pods and set(pods) <= gone_set:
            released.add(claim.key)
    devices = copy.copy(original)
    devices.snapshot = view
    devices.holder = {d: c for d, c in original.holder.items() if c.key not in released}
    view.devices = devices
    view.units = UnitIndex(view)
    return view


def plan_freeing(policy: PreemptionPolicy, problem: Problem, claims: GroupClaims) -> Plan:
    snapshot, gang = problem.snapshot, problem.gang
    view = without_units(snapshot, claims.freeing)
    inner = Problem(view, Preemptor(view, gang.key))
    inner.only_domains = problem.only_domains
    found = policy.plan(inner)
    if not found.feasible:
        return found
    by_identity = {(u.kind, u.namespace, u.name): u.index for u in snapshot.units.units}
    chosen = sorted(set(claims.freeing) | {by_identity[(v.kind, v.namespace, v.name)] for v in found.victims})
    found.victims = problem.describe_victims(chosen)
    found.cost = victim_cost(snapshot.units, chosen)
    freed = "; ".join(claims.freed)
    found.reason = (
        f"the PodGroup's claims need {freed}, so {len(claims.freeing)} unit(s) are evicted for them first; "
        f"after that: {found.reason}"
    )
    return found
