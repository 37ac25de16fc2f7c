"""Judging a plan against the raw snapshot documents, without the engine's own parser.

Deliberately naive (fixtures are small): it re-reads the YAML objects so that a parsing or
accounting mistake in the engine cannot hide behind the same mistake in the check.
"""

from __future__ import annotations

from pathlib import Path

import yaml

POLICY_ANNOTATION = "gangweb.io/preemption-policy"
_SUFFIXES = {
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}


def load_documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def key(obj: dict) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"


def quantity(value) -> float:
    text = str(value)
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIXES[suffix]
    return float(text)


def pod_requests(pod: dict) -> dict[str, float]:
    """Container requests summed (the fixtures have no init containers); pod-level requests
    (spec.resources) replace the sum for the resources they name."""
    totals: dict[str, float] = {"pods": 1.0}
    for container in pod["spec"]["containers"]:
        for resource, amount in ((container.get("resources") or {}).get("requests") or {}).items():
            totals[resource] = totals.get(resource, 0.0) + quantity(amount)
    for resource, amount in ((pod["spec"].get("resources") or {}).get("requests") or {}).items():
        totals[resource] = quantity(amount)
    return totals


def refusal(node: dict, pod: dict) -> str | None:
    """Why the node cannot take the pod whatever is evicted, or None."""
    if node["spec"].get("unschedulable"):
        return "cordoned"
    if any(c["type"] == "Ready" and c["status"] != "True" for c in node["status"].get("conditions", [])):
        return "not Ready"
    tolerations = pod["spec"].get("tolerations") or []
    for taint in node["spec"].get("taints") or []:
        if taint["effect"] in ("NoSchedule", "NoExecute") and not any(
            (t.get("operator") == "Exists" and t.get("key") in (None, taint["key"]))
            or (t.get("key") == taint["key"] and t.get("value") == taint.get("value"))
            for t in tolerations
            if t.get("effect") in (None, taint["effect"])
        ):
            return f"untolerated taint {taint['key']}"
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return "nodeSelector mismatch"
    return None


def host_ports(pod: dict) -> set[int]:
    return {
        port["hostPort"]
        for container in pod["spec"]["containers"]
        for port in container.get("ports", [])
        if port.get("hostPort")
    }


class RawSnapshot:
    def __init__(self, documents: list[dict]):
        self.documents = documents
        self.nodes = {d["metadata"]["name"]: d for d in documents if d["kind"] == "Node"}
        self.pods = {key(d): d for d in documents if d["kind"] == "Pod"}
        self.groups = {key(d): d for d in documents if d["kind"] == "PodGroup"}
        self.composites = {key(d): d for d in documents if d["kind"] == "CompositePodGroup"}
        self.budgets = [d for d in documents if d["kind"] == "PodDisruptionBudget"]
        self.priority_classes = {
            d["metadata"]["name"]: d["value"] for d in documents if d["kind"] == "PriorityClass"
        }

    def running(self) -> dict[str, dict]:
        """Bound pods that still hold their resources (finished ones hold nothing)."""
        return {
            k: p
            for k, p in self.pods.items()
            if p["spec"].get("nodeName") and p["status"].get("phase") not in ("Succeeded", "Failed")
        }

    def group_of(self, pod: dict) -> dict | None:
        name = (pod["spec"].get("schedulingGroup") or {}).get("podGroupName")
        return self.groups.get(f"{pod['metadata']['namespace']}/{name}") if name else None

    def pending_members(self, group_key: str) -> set[str]:
        group = self.groups[group_key]
        return {
            k for k, p in self.pods.items() if not p["spec"].get("nodeName") and self.group_of(p) is group
        }

    def running_members(self, group_key: str) -> set[str]:
        group = self.groups[group_key]
        return {k for k, p in self.running().items() if self.group_of(p) is group}

    def priority(self, spec: dict) -> int:
        if spec.get("priority") is not None:
            return spec["priority"]
        return self.priority_classes.get(spec.get("priorityClassName"), 0)

    def victim_priority(self, pod: dict) -> int:
        """The PodGroup's priority is authoritative for its pods; a pod without a group uses its own."""
        group = self.group_of(pod)
        return self.priority(group["spec"] if group else pod["spec"])

    def preemption_policy(self, group_key: str) -> str:
        group = self.groups[group_key]
        annotation = (group["metadata"].get("annotations") or {}).get(POLICY_ANNOTATION)
        return annotation or group["spec"].get("preemptionPolicy") or "PreemptLowerPriority"

    def all_mode_unit(self, pod: dict) -> str | None:
        """Key of the highest disruptionMode-all ancestor of the pod's group, if any."""
        current, unit, seen = self.group_of(pod), None, set()
        while current is not None and key(current) not in seen:
            seen.add(key(current))
            if "all" in (current["spec"].get("disruptionMode") or {}):
                unit = f"{current['kind']}/{key(current)}"
            parent = current["spec"].get("parentCompositePodGroupName")
            current = self.composites.get(f"{current['metadata']['namespace']}/{parent}") if parent else None
        return unit


def selector_matches(selector: dict | None, labels: dict) -> bool:
    if selector is None:
        return False  # a nil selector selects nothing; {} selects everything
    for label, value in (selector.get("matchLabels") or {}).items():
        if labels.get(label) != value:
            return False
    for requirement in selector.get("matchExpressions") or []:
        label, operator, values = requirement["key"], requirement["operator"], requirement.get("values") or []
        if operator == "In" and labels.get(label) not in values:
            return False
        if operator == "NotIn" and label in labels and labels[label] in values:
            return False
        if operator == "Exists" and label not in labels:
            return False
        if operator == "DoesNotExist" and label in labels:
            return False
    return True


def pdb_violations(snap: RawSnapshot, evictions: list[str]) -> int:
    """Evicted pods beyond each budget's disruptionsAllowed (pods already in disruptedPods are free)."""
    violations = 0
    for budget in snap.budgets:
        namespace = budget["metadata"].get("namespace")
        status = budget.get("status") or {}
        already_disrupted = set(status.get("disruptedPods") or {})
        charged = [
            k
            for k in evictions
            if k.split("/", 1)[0] == namespace
            and k.split("/", 1)[1] not in already_disrupted
            and selector_matches(budget["spec"].get("selector"), snap.pods[k]["metadata"].get("labels") or {})
        ]
        violations += max(0, len(charged) - int(status.get("disruptionsAllowed", 0)))
    return violations


def plan_cost(snap: RawSnapshot, plan: dict) -> tuple:
    """docs/design.md's order: PDB violations, highest victim priority, sum of victim priorities,
    victim units, evicted pods. (Lost GPU-seconds comes last; it never decides these cases.)"""
    priorities = [victim["priority"] for victim in plan["victims"]]
    return (
        pdb_violations(snap, plan["evictions"]),
        max(priorities, default=float("-inf")),
        sum(priorities),
        len(plan["victims"]),
        len(plan["evictions"]),
    )


def replay_problems(snap: RawSnapshot, plan: dict, group_key: str) -> list[str]:
    """Evict, then bind the placement; list everything that would not hold on the real cluster."""
    problems: list[str] = []
    running = snap.running()
    evicted = set(plan["evictions"])
    preemptor_priority = snap.priority(snap.groups[group_key]["spec"])
    for victim in sorted(evicted):
        if victim not in running:
            problems.append(f"{victim} is not a running pod")
        elif snap.victim_priority(running[victim]) >= preemptor_priority:
            problems.append(f"{victim} does not have strictly lower priority than the preemptor")
    units: dict[str, set[str]] = {}
    for k, pod in running.items():
        unit = snap.all_mode_unit(pod)
        if unit:
            units.setdefault(unit, set()).add(k)
    for unit, members in units.items():
        if members & evicted and not members <= evicted:
            problems.append(
                f"all-mode unit {unit} split: evicted {sorted(members & evicted)} of {sorted(members)}"
            )
    placed = plan["placement"]
    strangers = set(placed) - snap.pending_members(group_key)
    if strangers:
        problems.append(f"placement holds pods that are not pending members: {sorted(strangers)}")
    kept = [p for k, p in running.items() if k not in evicted]
    for node_name in sorted(set(placed.values())):
        node = snap.nodes.get(node_name)
        if node is None:
            problems.append(f"placement names unknown node {node_name}")
            continue
        newcomers = [snap.pods[k] for k, n in placed.items() if n == node_name]
        residents = [p for p in kept if p["spec"]["nodeName"] == node_name] + newcomers
        for resource in {r for p in residents for r in pod_requests(p)}:
            used = sum(pod_requests(p).get(resource, 0.0) for p in residents)
            allocatable = quantity(node["status"]["allocatable"].get(resource, 0))
            if used > allocatable + 1e-9:
                problems.append(f"{node_name}: {resource} {used:g} > allocatable {allocatable:g}")
        ports = [port for p in residents for port in host_ports(p)]
        if len(ports) != len(set(ports)):
            problems.append(f"{node_name}: host port used twice {sorted(ports)}")
        for pod in newcomers:
            reason = refusal(node, pod)
            if reason:
                problems.append(f"{key(pod)} placed on {node_name}: {reason}")
    topology = (snap.groups[group_key]["spec"].get("schedulingConstraints") or {}).get("topology") or []
    if topology and placed:
        # Running members pin the domain: the whole group shares one value of the topology label.
        group_nodes = set(placed.values()) | {
            running[k]["spec"]["nodeName"] for k in snap.running_members(group_key)
        }
        values = {
            (snap.nodes[n]["metadata"].get("labels") or {}).get(topology[0]["key"])
            for n in group_nodes
            if n in snap.nodes
        }
        if len(values) != 1 or plan.get("domain") not in values:
            problems.append(f"group spans {sorted(map(str, values))}, plan domain {plan.get('domain')}")
    return problems
