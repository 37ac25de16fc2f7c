"""A naive first-fit binder standing in for kube-scheduler in the simulated cluster.

It never preempts: a gang that does not fit stays pending, which is exactly the situation gangweb's
engine is there to resolve. A gang binds all-or-nothing: either enough pending pods find GPUs at once
to bring the gang to ``minCount`` (the rest join as they fit), or none is bound.

GPUs are the only resource counted, unless the gang has ``pod_requests`` and the nodes
``free_resources``: equal-length tuples (GPUs first), compared resource by resource. The trace replay
(``scheduler/replay/``) binds its CPU- and memory-carrying pods that way; the demo's records do not.
"""

from __future__ import annotations

from scheduler.simulation.state import Gang, SimNode, SimPod


def first_fit(
    gang: Gang, pending: list[SimPod], running: list[SimPod], nodes: list[SimNode]
) -> dict[str, str] | None:
    """Pod key -> node name for the pending pods, or None when the gang cannot be placed now.

    ``running`` are the gang's pods already bound (after a partial eviction): they count toward
    ``minCount`` and, with a topology constraint, pin the gang to their rack.
    """
    needed = max(0, gang.min_count - len(running))
    candidates = [n for n in nodes if n.ready]
    if gang.topology:
        by_rack: dict[str, list[SimNode]] = {}
        for node in candidates:  # one pass, in the nodes' order (a pass per rack was quadratic)
            by_rack.setdefault(node.rack, []).append(node)
        held = {p.node for p in running}
        pinned = {n.rack for n in nodes if n.name in held}
        racks = sorted(r for r in by_rack if not pinned or r in pinned)
        for rack in racks:
            placement = _fill(by_rack[rack], pending, _demand(gang), needed)
            if placement is not None:
                return placement
        return None
    return _fill(candidates, pending, _demand(gang), needed)


def _demand(gang: Gang) -> tuple[int, ...]:
    return getattr(gang, "pod_requests", None) or (gang.pod_gpus,)


def _free(node: SimNode, width: int) -> list[int]:
    free = getattr(node, "free_resources", None)
    return list(free) if free is not None and width > 1 else [node.free_gpus]


def _fill(
    nodes: list[SimNode], pending: list[SimPod], demand: tuple[int, ...], needed: int
) -> dict[str, str] | None:
    free: dict[str, list[int]] = {}  # filled as nodes are visited
    placement: dict[str, str] = {}
    # Every pod asks the same, and a node's room only shrinks: the nodes before the one the last pod
    # took did not fit it and fit no later pod, so each pod's search starts where the last one ended.
    start = 0
    for pod in pending:
        for at in range(start, len(nodes)):
            node = nodes[at]
            room = free.get(node.name)
            if room is None:
                room = free[node.name] = _free(node, len(demand))
            if all(have >= want for have, want in zip(room, demand)):
                free[node.name] = [have - want for have, want in zip(room, demand)]
                placement[pod.key] = node.name
                start = at
                break
        else:
            break  # no node fits this pod, so none fits the ones after it
    if len(placement) < needed or not placement:
        return None
    return placement
