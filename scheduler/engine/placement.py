"""Where pods may go: static node filters, topology domains and greedy gang placement.

Filters follow kube-scheduler's: NodeUnschedulable / Ready, TaintToleration (NoSchedule,
NoExecute), NodeAffinity (``nodeSelector`` and required terms, all operators), NodePorts and
NodeResourcesFit (only resources the pod requests, plus the pod count). Placement scores nodes
like the default NodeResourcesFit ``LeastAllocated`` on cpu and memory; ties go to the first node
by name so that the same snapshot always gives the same placement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .selectors import tolerates_all

if TYPE_CHECKING:
    from .snapshot import Snapshot
    from .typed_objects import HostPort, Node, Pod

# How place_least_allocated scores the candidate nodes of one pod: one integer per candidate.
Scorer = Callable[["Snapshot", np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]

CPU_COL, MEMORY_COL = 1, 2


def node_mask(snapshot: Snapshot, pod: Pod) -> np.ndarray:
    """Nodes the pod may use regardless of what runs there (cached per placement signature)."""
    signature = ("mask", pod.placement_signature())
    cached: np.ndarray | None = snapshot.cache.get(signature)
    if cached is not None:
        return cached
    mask = snapshot.node_usable.copy()
    # Only tainted nodes need a toleration check, and only selective pods a per-node label check.
    for i in snapshot.tainted_nodes:
        if mask[i] and not tolerates_all(pod.tolerations, snapshot.nodes[i].taints):
            mask[i] = False
    if pod.node_selector or pod.affinity_terms is not None:
        for i in np.flatnonzero(mask).tolist():
            if not matches_node_affinity(pod, snapshot.nodes[i]):
                mask[i] = False
    mask.flags.writeable = False
    snapshot.cache[signature] = mask
    return mask


def unavailable_nodes(snapshot: Snapshot, pod: Pod) -> str:
    """Why no node passes the static filters for the pod, in kube-scheduler's words: each node
    counted once, under the first filter it fails (Ready, cordon, taints, selector/affinity)."""
    if not snapshot.nodes:
        return "the snapshot has no nodes"
    counts = dict.fromkeys(
        (
            "were not ready",
            "were unschedulable (cordoned)",
            "had untolerated taint(s)",
            "didn't match the pod's node selector or required node affinity",
        ),
        0,
    )
    for node in snapshot.nodes:
        if not node.ready:
            counts["were not ready"] += 1
        elif node.cordoned:
            counts["were unschedulable (cordoned)"] += 1
        elif not tolerates_all(pod.tolerations, node.taints):
            counts["had untolerated taint(s)"] += 1
        elif not matches_node_affinity(pod, node):
            counts["didn't match the pod's node selector or required node affinity"] += 1
    counted = ", ".join(f"{count} node(s) {why}" for why, count in counts.items() if count)
    return f"0/{len(snapshot.nodes)} nodes are available to pod {pod.key}: {counted}"


def matches_node_affinity(pod: Pod, node: Node) -> bool:
    """``nodeSelector`` and the required node affinity terms (ORed)."""
    if pod.node_selector and any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    return pod.affinity_terms is None or any(t.matches(node.name, node.labels) for t in pod.affinity_terms)


def topology_domains(snapshot: Snapshot, key: str) -> tuple[list[str], np.ndarray]:
    """Distinct values of node label ``key`` (sorted) and each node's value index (-1 = no label)."""
    cached = snapshot.cache.get(("domains", key))
    if cached is None:
        values = sorted({n.labels[key] for n in snapshot.nodes if key in n.labels})
        position = {v: i for i, v in enumerate(values)}
        node_domain = np.array(
            [position.get(n.labels[key], -1) if key in n.labels else -1 for n in snapshot.nodes],
            dtype=np.int64,
        )
        cached = (values, node_domain)
        snapshot.cache[("domains", key)] = cached
    return cached


def ports_conflict(wanted: Iterable[tuple[str, str, int]], used: Iterable[tuple[str, str, int]]) -> bool:
    used = list(used)
    for protocol, ip, port in wanted:
        for u_protocol, u_ip, u_port in used:
            if (
                port == u_port
                and protocol == u_protocol
                and (ip == u_ip or ip in ("", "0.0.0.0") or u_ip in ("", "0.0.0.0"))
            ):
                return True
    return False


_COLUMNS: dict[bytes, np.ndarray] = {}


def fit_columns(request: np.ndarray) -> np.ndarray:
    """Columns NodeResourcesFit checks for this request: the ones it asks for (pods always)."""
    key = request.tobytes()
    cols = _COLUMNS.get(key)
    if cols is None:
        if len(_COLUMNS) > 10_000:
            _COLUMNS.clear()
        cols = _COLUMNS[key] = np.flatnonzero(request)
    return cols


def fits(free_row: np.ndarray, request: np.ndarray) -> bool:
    cols = fit_columns(request)
    return bool(np.all(free_row[cols] >= request[cols]))


def least_allocated_scores(
    snapshot: Snapshot, local_free: np.ndarray, request: np.ndarray, candidates: np.ndarray, nodes: np.ndarray
) -> np.ndarray:
    """Integer NodeResourcesFit LeastAllocated score (cpu and memory, equal weights).
    ``local_free`` rows and ``candidates`` are positions in ``nodes``."""
    total = np.zeros(len(candidates), dtype=np.int64)
    free = local_free
    for col in (CPU_COL, MEMORY_COL):
        alloc = snapshot.alloc[nodes[candidates], col]
        left = free[candidates, col] - request[col]
        total += np.where(alloc > 0, (np.maximum(left, 0) * 100) // np.maximum(alloc, 1), 0)
    return total // 2


def tightest_fit_scores(
    snapshot: Snapshot, local_free: np.ndarray, request: np.ndarray, candidates: np.ndarray, nodes: np.ndarray
) -> np.ndarray:
    """Best fit on what the pod asks for (GPUs and every other requested resource): the node left
    with the least free share scores highest. Packs a gang onto as few freed nodes as possible."""
    cols = fit_columns(request)[1:]  # not the pod count
    total = np.zeros(len(candidates), dtype=np.int64)
    for col in cols.tolist():
        alloc = snapshot.alloc[nodes[candidates], col]
        left = local_free[candidates, col] - request[col]
        total += 100 - np.where(alloc > 0, (np.maximum(left, 0) * 100) // np.maximum(alloc, 1), 0)
    return total


class PortBook:
    """Host ports in use per node, given which pods are present (only built when ports matter)."""

    def __init__(self, snapshot: Snapshot, present: Callable[[int], bool]) -> None:
        self.snapshot, self.present = snapshot, present
        self.extra: dict[int, list[HostPort]] = {}

    def used(self, node: int) -> list[HostPort]:
        pods = self.snapshot.pods
        ports = [
            port
            for p in self.snapshot.pods_by_node[node]
            if pods[p].host_ports and self.present(p)
            for port in pods[p].host_ports
        ]
        return ports + self.extra.get(node, [])

    def add(self, node: int, ports: Sequence[HostPort]) -> None:
        self.extra.setdefault(node, []).extend(ports)


def place_least_allocated(
    snapshot: Snapshot,
    pods: Sequence[int],
    local_free: np.ndarray,
    nodes: np.ndarray,
    port_book: PortBook | None = None,
    scorer: Scorer = least_allocated_scores,
) -> list[int]:
    """Greedy kube-scheduler-like placement, pod by pod, onto ``nodes`` (indices) whose free
    capacity rows are ``local_free`` (a copy this function consumes). Returns the node index per pod
    (-1 when it did not fit anywhere)."""
    out = []
    shape = None
    for pod_idx in pods:
        pod = snapshot.pods[pod_idx]
        request = snapshot.pod_req[pod_idx]
        cols = fit_columns(request)
        key = (request.tobytes(), pod.placement_signature())
        if key != shape:
            # A new shape: score every node once; later pods of the shape only rescore one node.
            shape = key
            allowed = node_mask(snapshot, pod)[nodes]
            feasible = allowed & np.all(local_free[:, cols] >= request[cols], axis=1)
            scores = np.full(len(nodes), -1, dtype=np.int64)
            where = np.flatnonzero(feasible)
            scores[where] = scorer(snapshot, local_free, request, where, nodes)
        candidates = None
        if pod.host_ports and port_book is not None:
            candidates = [
                c
                for c in np.flatnonzero(scores >= 0).tolist()
                if not ports_conflict(pod.host_ports, port_book.used(int(nodes[c])))
            ]
            if not candidates:
                out.append(-1)
                continue
            local = candidates[int(np.argmax(scores[candidates]))]
        else:
            local = int(np.argmax(scores))
            if scores[local] < 0:
                out.append(-1)
                continue
        node = int(nodes[local])
        local_free[local] -= request
        if bool(allowed[local]) and np.all(local_free[local, cols] >= request[cols]):
            scores[local] = scorer(snapshot, local_free, request, np.array([local]), nodes)[0]
        else:
            scores[local] = -1
        if pod.host_ports and port_book is not None:
            port_book.add(node, pod.host_ports)
        out.append(node)
    return out
