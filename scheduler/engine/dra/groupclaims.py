"""PodGroup-level claims (KEP-5729): whether they can be allocated, and plans for gangs whose claims
need devices that lower-priority units hold.

The units whose claims free those devices (``group_claim_needs``) are evicted first: the policy
plans on a *view* of the snapshot without them (their pods gone, their claims' devices free), and the
plan it finds gets them as victims too, its cost counted on the whole victim set. The view shares
everything else with the snapshot, which it never changes.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..contract import UNMODELLED, Plan
from ..evaluation import Problem
from ..preemptor import Preemptor
from ..victims import UnitIndex, victim_cost
from .objects import ALL_DEVICES, Request, ResourceClaim

if TYPE_CHECKING:
    from ..policies.base import PreemptionPolicy
    from ..snapshot import Snapshot
    from ..typed_objects import Group
    from .devices import DeviceIndex


class GroupClaims:
    """What a PodGroup's own claims (KEP-5729) need: ``blocked`` (why they cannot be allocated, or None),
    ``notes``, and ``freeing``: victim units to evict first so that their claims' devices serve them."""

    __slots__ = ("blocked", "freed", "freeing", "notes")

    def __init__(self) -> None:
        self.blocked: str | None = None
        self.notes: list[str] = []
        self.freeing: list[int] = []
        self.freed: list[str] = []  # "N device(s) for claim 'x'" per claim that needs evictions


def group_claim_needs(
    index: DeviceIndex, group: Group, priority: int, pending: Sequence[int] = ()
) -> GroupClaims:
    """A PodGroup claim already allocated is fine; one to be created needs, for every request, free devices
    or devices held by claims of single lower-priority units (evicted first, least important first); so do
    the requests the ``pending`` pods' own claims make of pools shared by several nodes (``sharedpools``).
    Otherwise it blocks, saying how many devices are free and how many lower-priority consumers hold."""
    from .sharedpools import pending_shared_needs

    out = GroupClaims()
    taken = np.zeros(len(index.devices), dtype=bool)
    freeable = _freeable_claims(index, priority)
    for ref in group.claim_refs:
        source, label = index.resolve(group.namespace, ref, group.claim_statuses)
        if source is None:
            out.blocked = f"PodGroup claim {ref.name!r} cannot be allocated: {label}"
            return out
        if isinstance(source, ResourceClaim):
            if source.is_allocated:
                continue
            source = source.spec
        out.notes.extend(index.spec_notes(source, label))
        for request in source.requests:
            if request.admin:
                continue
            matcher = index.matcher(request, label)
            if matcher is None:
                out.blocked = f"PodGroup claim {ref.name!r} ({label}) names the missing DeviceClass {request.class_name}"
                return out
            note = index.cel_note(matcher)
            if note:
                out.notes.append(f"{label}: {note}")
            wanted = int(matcher.matches.sum()) if request.mode == ALL_DEVICES else request.count
            if not _take(
                index,
                out,
                taken,
                freeable,
                matcher.matches,
                max(wanted, 1),
                request,
                (
                    f"PodGroup claim {ref.name!r} ({label})",
                    f"PodGroup claim {ref.name!r}",
                ),
            ):
                return out
    for _matcher, request, devices, wanted, pods in pending_shared_needs(index, list(pending)):
        shared = f"pools shared by several nodes ({pods} pending pod(s)' own claims)"
        if not _take(index, out, taken, freeable, devices, wanted, request, (shared, shared)):
            return out
    return out


def _take(
    index: DeviceIndex,
    out: GroupClaims,
    taken: np.ndarray,
    freeable: list[tuple[int, list[int]]],
    devices: np.ndarray,
    wanted: int,
    request: Request,
    what: tuple[str, str],
) -> bool:
    """Take ``wanted`` of the ``devices`` (a mask): free ones, then those lower-priority units hold (recorded
    in ``out.freeing``). False, with ``out.blocked`` said, when there are too few."""
    free = index.free_devices(devices) & ~taken
    chosen = list(np.flatnonzero(free)[:wanted])
    units: list[int] = []
    for unit, held in freeable:
        if len(chosen) >= wanted:
            break
        usable = [d for d in held if devices[d] and not taken[d] and index.usable[d]]
        if usable:
            chosen += usable[: wanted - len(chosen)]
            units.append(unit)
    if len(chosen) < wanted:
        lower = sum(len([d for d in held if devices[d]]) for _, held in freeable)
        out.blocked = (
            f"{what[0]} needs {wanted} device(s) of DeviceClass {request.class_name} for request "
            f"{request.name!r}: {int(free.sum())} free, {lower} held by lower-priority units that evicting would free"
        )
        return False
    taken[chosen] = True
    if units:
        out.freeing += [u for u in units if u not in out.freeing]
        out.freed.append(f"{len(chosen) - int(free.sum())} device(s) for {what[1]}")
    return True


def _freeable_claims(index: DeviceIndex, priority: int) -> list[tuple[int, list[int]]]:
    """(victim unit, devices its eviction frees) for claims whose consumers are one lower-priority unit,
    least important unit first (the order the engine evicts in)."""
    snap = index.snapshot
    by_unit: dict[int, list[int]] = {}
    for device, claim in sorted(index.holder.items()):
        pods = index.consumer_pods(claim)
        if not pods:
            continue
        units = {int(snap.units.pod_unit[p]) for p in pods}
        if len(units) != 1:
            continue
        unit = units.pop()
        if unit >= 0 and snap.units.units[unit].priority < priority:
            by_unit.setdefault(unit, []).append(device)
    return sorted(by_unit.items(), key=lambda item: -item[0])


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
    assert original is not None  # units are evicted for claims only in snapshots with DRA objects
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
    found = policy.plan(inner)
    if not found.feasible:
        return found
    by_identity = {(u.kind, u.namespace, u.name): u.index for u in snapshot.units.units}
    chosen = sorted(set(claims.freeing) | {by_identity[(v.kind, v.namespace, v.name)] for v in found.victims})
    found.victims = problem.describe_victims(chosen)
    found.cost = victim_cost(snapshot.units, chosen)
    # The units freed for the claims are chosen least important first, not searched: nothing is proven.
    found.searched = UNMODELLED if policy.searches_exactly else ""
    freed = "; ".join(claims.freed)
    found.reason = (
        f"the gang's claims need {freed}, so {len(claims.freeing)} unit(s) are evicted for them first; "
        f"after that: {found.reason}"
    )
    return found
