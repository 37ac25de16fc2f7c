"""Devices of pools shared by several nodes (a slice's ``allNodes`` or ``nodeSelector``, or per-device node
selection that reaches more than one node) for pods' own claims.

Such a device is no node's capacity: any node that reaches it may have it, but only one pod gets it. A
request whose matching devices all sit in shared pools is planned in two halves:

- per node, its matcher column holds the usable matching devices the node reaches (``reach_capacity``),
  so a pod lands only where its devices can come from, and never asks one node for more than it reaches;
- per gang, the devices every pending pod asks from shared pools are taken from the free ones first, then
  from those that claims of single lower-priority units hold, least important first
  (``groupclaims.group_claim_needs``, as for PodGroup-level claims): those units are evicted first, and
  when neither suffices the plan is ``infeasible:device-claim``.

The gang-level count adds up every pending pod's needs. Pools that reach different sets of nodes are not
told apart per pod: the whole need is asked of each such set of pools, so no device is planned twice, but
a gang that could split across them is refused (docs/engine.md, "Known limits"). A request that matches node-local
devices too is planned on the node-local ones only, and the reason says so; so is ``allocationMode: All``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .devices import DeviceIndex, Matcher
    from .objects import Request

SHARED = -2  # DeviceIndex.local of a device that several nodes reach


def mark_shared(index: DeviceIndex, matcher: Matcher) -> str | None:
    """Mark a matcher served from shared pools when only shared devices match it; else the note to give
    when shared devices match but are not counted (None when none match)."""
    usable = matcher.matches & index.usable
    if not (usable & (index.local == SHARED)).any():
        return None
    if (usable & (index.local >= 0)).any():
        return (
            "devices of pools shared by several nodes are not counted (the request matches node-local ones)"
        )
    if matcher.all_mode:
        return "allocationMode All over pools shared by several nodes is not modelled"
    matcher.shared = True
    return None


def shared_devices(index: DeviceIndex, matcher: Matcher) -> np.ndarray:
    shared: np.ndarray = matcher.matches & index.usable & (index.local == SHARED)
    return shared


def reach_capacity(index: DeviceIndex, matcher: Matcher) -> np.ndarray:
    """Per node, how many of the matcher's shared devices it reaches."""
    capacity = np.zeros(len(index.snapshot.nodes), dtype=np.int64)
    by_reach: dict[int, tuple[list[int], int]] = {}
    for device in np.flatnonzero(shared_devices(index, matcher)):
        reach = index.reach[int(device)]
        nodes, count = by_reach.get(id(reach), (reach, 0))
        by_reach[id(reach)] = (nodes, count + 1)
    for nodes, count in by_reach.values():
        capacity[nodes] += count
    return capacity


def pending_shared_needs(
    index: DeviceIndex, pending: list[int]
) -> list[tuple[Matcher, Request, np.ndarray, int, int]]:
    """(matcher, a request, devices that may serve, devices wanted, pods asking) per shared matcher the
    gang's pending pods use, and per set of nodes its pools reach. Pools that reach different nodes are
    not told apart per pod: the gang's whole need is asked of each of them, which never takes a device
    twice but may ask for more than a placement across them would."""
    found: dict[str, list[Any]] = {}  # column -> [matcher, a request, devices wanted, pods asking]
    for pod in pending:
        for request in index.pending_needs.get(pod, ()):
            if request is None:
                continue
            matcher = index.matcher(request, "")
            if matcher is not None and matcher.shared:
                entry = found.setdefault(matcher.column, [matcher, request, 0, set()])
                entry[2] += request.count
                entry[3].add(pod)
    out = []
    for matcher, request, wanted, pods in found.values():
        devices = shared_devices(index, matcher)
        groups: dict[int, np.ndarray] = {}
        for device in np.flatnonzero(devices):
            mask = groups.setdefault(id(index.reach[int(device)]), np.zeros(len(devices), dtype=bool))
            mask[device] = True
        out += [(matcher, request, mask, wanted, len(pods)) for mask in groups.values()]
    return out
