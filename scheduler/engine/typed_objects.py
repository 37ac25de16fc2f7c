"""Typed views of the Kubernetes objects the engine reads, parsed and validated from raw dicts.

Each ``parse_*`` raises ``ValueError("field: problem")``; ``snapshot.py`` prefixes the object name.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .checkpoints import last_checkpoint
from .gangkey import gang_key_of
from .resources import parse_resource_list, pod_requests
from .selectors import (
    LabelSelector,
    NodeSelectorTerm,
    Taint,
    Toleration,
    parse_label_selector,
    parse_node_selector_terms,
)

PREEMPT = "PreemptLowerPriority"
NEVER = "Never"
PREEMPTION_POLICIES = (PREEMPT, NEVER)
POLICY_ANNOTATION = "gangweb.io/preemption-policy"
ALL, SINGLE = "all", "single"
HostPort = tuple[str, str, int]  # (protocol, hostIP, hostPort) of a container port

if TYPE_CHECKING:
    from .dra.objects import ClaimRef


def _map(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected an object")
    return value


def _str_map(value: Any, where: str) -> dict[str, str]:
    value = _map(value, where)
    if not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{where}: expected a map of strings")
    return dict(value)


INT32 = (-(2**31), 2**31 - 1)


def _int(value: Any, where: str, *, minimum: int | None = None, maximum: int = INT32[1]) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{where}: must be >= {minimum}, got {value}")
    if value > maximum or value < INT32[0]:
        raise ValueError(f"{where}: out of range, got {value}")
    return value


def _opt_str(value: Any, where: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected a string")
    return value


def parse_time(value: Any, where: str) -> float | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected an RFC 3339 timestamp")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ValueError(f"{where}: invalid timestamp {value!r}") from None


def timestamp_or_none(value: Any) -> float | None:
    """Lenient ``parse_time`` for readers that show or rank objects rather than validate them."""
    try:
        return parse_time(value, "timestamp")
    except ValueError:
        return None


def _checkpoint(annotations: Mapping[str, str]) -> float | None:
    """The last checkpoint the object reports (``checkpoints.py``), seconds since the epoch."""
    moment = last_checkpoint(annotations) if annotations else None
    return moment.timestamp() if moment is not None else None


def _preemption_policy(value: Any, where: str) -> str | None:
    if value is None or value == "":
        return None
    if value not in PREEMPTION_POLICIES:
        raise ValueError(f"{where}: must be PreemptLowerPriority or Never, got {value!r}")
    return str(value)


class Meta:
    __slots__ = ("annotations", "created", "deleting", "labels", "name", "namespace", "uid")

    def __init__(self, raw: Any, namespaced: bool) -> None:
        meta = _map(raw, "metadata")
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("metadata.name: required")
        namespace = meta.get("namespace")
        if namespaced and (namespace is not None and not isinstance(namespace, str)):
            raise ValueError("metadata.namespace: expected a string")
        self.name = name
        self.namespace = (namespace or "default") if namespaced else ""
        self.labels = _str_map(meta.get("labels"), "metadata.labels")
        self.annotations = _str_map(meta.get("annotations"), "metadata.annotations")
        self.uid = meta.get("uid") if isinstance(meta.get("uid"), str) else ""
        self.created = parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp")
        self.deleting = meta.get("deletionTimestamp") not in (None, "")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class Node:
    __slots__ = ("allocatable", "cordoned", "labels", "name", "ready", "taints")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=False)
        spec, status = _map(obj.get("spec"), "spec"), _map(obj.get("status"), "status")
        self.name, self.labels = meta.name, meta.labels
        self.allocatable = parse_resource_list(status.get("allocatable"), "status.allocatable")
        self.cordoned = bool(spec.get("unschedulable"))
        self.taints: list[Taint] = []
        taints = spec.get("taints") or []
        if not isinstance(taints, list):
            raise ValueError("spec.taints: expected a list")
        for i, taint in enumerate(taints):
            if not isinstance(taint, dict) or not isinstance(taint.get("key"), str):
                raise ValueError(f"spec.taints[{i}].key: required")
            effect = taint.get("effect")
            if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise ValueError(f"spec.taints[{i}].effect: unknown effect {effect!r}")
            self.taints.append((taint["key"], str(taint.get("value") or ""), effect))
        # Without a Ready condition (hand-written snapshots) the node counts as Ready.
        self.ready = True
        conditions = status.get("conditions") or []
        if not isinstance(conditions, list):
            raise ValueError("status.conditions: expected a list")
        for condition in conditions:
            if isinstance(condition, dict) and condition.get("type") == "Ready":
                self.ready = condition.get("status") == "True"


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    raw = spec.get("tolerations") or []
    if not isinstance(raw, list):
        raise ValueError("spec.tolerations: expected a list")
    out = []
    for i, t in enumerate(raw):
        if not isinstance(t, dict):
            raise ValueError(f"spec.tolerations[{i}]: expected an object")
        operator = t.get("operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise ValueError(f"spec.tolerations[{i}].operator: unknown operator {operator!r}")
        out.append((str(t.get("key") or ""), operator, str(t.get("value") or ""), str(t.get("effect") or "")))
    return tuple(out)


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports = []
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            container_ports = container.get("ports") or []
            if not isinstance(container_ports, list):
                raise ValueError(f"spec.{field}[{i}].ports: expected a list")
            for j, port in enumerate(container_ports):
                if not isinstance(port, dict):
                    raise ValueError(f"spec.{field}[{i}].ports[{j}]: expected an object")
                host_port = _int(port.get("hostPort"), f"spec.{field}[{i}].ports[{j}].hostPort", minimum=0)
                if host_port:
                    ports.append(
                        (str(port.get("protocol") or "TCP"), str(port.get("hostIP") or ""), host_port)
                    )
    return tuple(ports)


# kube-scheduler's word that a group can never be scheduled as configured (kubernetes/kubernetes#140670, for
# the release after 1.37): the PodGroupInitiallyScheduled condition False with this reason. Read when present.
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
INVALID_REASON = "Invalid"


def _invalid(status: Mapping[str, Any]) -> str | None:
    """The message of an ``Invalid`` PodGroupInitiallyScheduled condition, else None."""
    for condition in status.get("conditions") or []:
        if (
            isinstance(condition, dict)
            and condition.get("type") == INITIALLY_SCHEDULED
            and condition.get("status") == "False"
            and condition.get("reason") == INVALID_REASON
        ):
            return str(condition.get("message") or "no message")
    return None


def _claims(
    spec: Mapping[str, Any], status: Mapping[str, Any], kind: str
) -> tuple[list[ClaimRef], dict[str, str]]:
    """DRA claim references, parsed (``dra.object_claims``) only when the object has any."""
    containers = (spec.get("containers") or []) if kind == "Pod" else []
    used = any(isinstance(c, dict) and "claims" in (c.get("resources") or {}) for c in containers)
    if not (used or spec.get("resourceClaims") or status.get("resourceClaimStatuses")):
        return [], {}
    from .dra.objects import object_claims

    return object_claims(spec, status, kind)


def _disrupted_by_scheduler(status: Mapping[str, Any]) -> bool:
    """The pod's first ``DisruptionTarget`` condition is True with reason ``PreemptionByScheduler``
    (kube-scheduler's ``PodTerminatingByPreemption``, less the deletion timestamp it also asks for)."""
    conditions = status.get("conditions") or []
    if not isinstance(conditions, list):
        raise ValueError("status.conditions: expected a list")
    for condition in conditions:
        condition = _map(condition, "status.conditions[]")
        if condition.get("type") == "DisruptionTarget":
            return condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler"
    return False


class Pod:
    __slots__ = (
        "active",
        "affinity_terms",
        "checkpoint",
        "claim_refs",
        "claim_statuses",
        "created",
        "gang_key",
        "group_name",
        "host_ports",
        "key",
        "labels",
        "name",
        "namespace",
        "node_name",
        "node_selector",
        "nominated_node",
        "preempted",
        "preemption_policy",
        "priority",
        "priority_class",
        "requests",
        "start_time",
        "terminating",
        "tolerations",
        "uid",
        "uses_pod_affinity",
    )

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=True)
        spec, status = _map(obj.get("spec"), "spec"), _map(obj.get("status"), "status")
        self.key, self.namespace, self.name, self.labels = meta.key, meta.namespace, meta.name, meta.labels
        self.uid = meta.uid or meta.key
        self.created = meta.created
        self.node_name = _opt_str(spec.get("nodeName"), "spec.nodeName")
        phase = status.get("phase")
        self.active = not meta.deleting and phase not in ("Succeeded", "Failed")
        # Deleted but not finished: it holds its node's room until it is gone (``Snapshot.holding_for``).
        self.terminating = meta.deleting and phase not in ("Succeeded", "Failed")
        self.preempted = meta.deleting and _disrupted_by_scheduler(status)
        self.nominated_node = _opt_str(status.get("nominatedNodeName"), "status.nominatedNodeName")
        group = _map(spec.get("schedulingGroup"), "spec.schedulingGroup")
        self.group_name = _opt_str(group.get("podGroupName"), "spec.schedulingGroup.podGroupName")
        # Its PodGroup's key, made once here: every index of the pod looks its group up by it.
        self.gang_key = gang_key_of(self.namespace, self.group_name) if self.group_name else None
        self.priority = _int(spec.get("priority"), "spec.priority")
        self.priority_class = _opt_str(spec.get("priorityClassName"), "spec.priorityClassName")
        self.preemption_policy = _preemption_policy(spec.get("preemptionPolicy"), "spec.preemptionPolicy")
        if not isinstance(spec.get("containers") or [], list):
            raise ValueError("spec.containers: expected a list")
        self.requests = pod_requests(spec)
        self.node_selector = _str_map(spec.get("nodeSelector"), "spec.nodeSelector")
        affinity = _map(spec.get("affinity"), "spec.affinity")
        node_affinity = _map(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.affinity_terms: list[NodeSelectorTerm] | None = None
        if required is not None:
            self.affinity_terms = parse_node_selector_terms(
                required, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            )
        self.uses_pod_affinity = bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))
        self.tolerations = _tolerations(spec)
        self.host_ports = _host_ports(spec)
        self.start_time = parse_time(status.get("startTime"), "status.startTime")
        self.checkpoint = _checkpoint(meta.annotations)
        self.claim_refs, self.claim_statuses = _claims(spec, status, "Pod")

    def placement_signature(self) -> tuple[object, ...]:
        """Everything but resources that decides which nodes may host the pod (cache key)."""
        affinity = (
            None
            if self.affinity_terms is None
            else tuple((tuple(t.expressions), tuple(t.fields)) for t in self.affinity_terms)
        )
        return (tuple(sorted(self.node_selector.items())), affinity, self.tolerations)


def _one_of(raw: Any, where: str, choices: tuple[str, ...]) -> tuple[str, Mapping[str, Any]]:
    value = _map(raw, where)
    present = [c for c in choices if c in value]
    if len(present) != 1:
        raise ValueError(f"{where}: exactly one of {', '.join(choices)} is required")
    return present[0], _map(value[present[0]], f"{where}.{present[0]}")


def _disruption_mode(raw: Any, where: str) -> str:
    if raw is None:
        return SINGLE
    if isinstance(raw, str):  # v1alpha2 spelling
        lowered = raw.lower()
        if lowered in ("all", "podgroup"):
            return ALL
        if lowered in ("single", "pod"):
            return SINGLE
        raise ValueError(f"{where}: unknown disruption mode {raw!r}")
    return _one_of(raw, where, (SINGLE, ALL))[0]


def disruption_mode(spec: Mapping[str, Any]) -> str:
    """A PodGroup's or CompositePodGroup's ``spec.disruptionMode``: ``ALL`` or ``SINGLE`` (the default)."""
    return _disruption_mode(spec.get("disruptionMode"), "spec.disruptionMode")


class Group:
    """A PodGroup or a CompositePodGroup (same fields that matter to preemption)."""

    __slots__ = (
        "checkpoint",
        "claim_refs",
        "claim_statuses",
        "disruption",
        "invalid",
        "key",
        "kind",
        "min_count",
        "name",
        "namespace",
        "parent",
        "policy",
        "preemption_policy",
        "priority",
        "priority_class",
        "topology_key",
        "uid",
    )

    def __init__(self, obj: Mapping[str, Any], kind: str) -> None:
        meta = Meta(obj.get("metadata"), namespaced=True)
        spec = _map(obj.get("spec"), "spec")
        self.kind, self.key, self.namespace, self.name, self.uid = (
            kind,
            meta.key,
            meta.namespace,
            meta.name,
            meta.uid,
        )
        count_field = "minCount" if kind == "PodGroup" else "minGroupCount"
        policy_raw = spec.get("schedulingPolicy")
        if policy_raw is None and kind == "CompositePodGroup":
            policy_raw = {"basic": {}}
        self.policy, details = _one_of(policy_raw, "spec.schedulingPolicy", ("basic", "gang"))
        self.min_count = 1
        if self.policy == "gang":
            min_count = _int(details.get(count_field), f"spec.schedulingPolicy.gang.{count_field}", minimum=1)
            if min_count is None:
                raise ValueError(f"spec.schedulingPolicy.gang.{count_field}: required")
            self.min_count = min_count
        self.disruption = _disruption_mode(spec.get("disruptionMode"), "spec.disruptionMode")
        self.priority = _int(spec.get("priority"), "spec.priority")
        self.priority_class = _opt_str(spec.get("priorityClassName"), "spec.priorityClassName")
        annotation = meta.annotations.get(POLICY_ANNOTATION)
        self.preemption_policy = _preemption_policy(
            annotation, f"metadata.annotations[{POLICY_ANNOTATION}]"
        ) or _preemption_policy(spec.get("preemptionPolicy"), "spec.preemptionPolicy")
        constraints = _map(spec.get("schedulingConstraints"), "spec.schedulingConstraints")
        topology = constraints.get("topology") or []
        if not isinstance(topology, list):
            raise ValueError("spec.schedulingConstraints.topology: expected a list")
        self.topology_key: str | None = None
        if topology:
            first = topology[0]
            if not isinstance(first, dict) or not isinstance(first.get("key"), str) or not first["key"]:
                raise ValueError("spec.schedulingConstraints.topology[0].key: required")
            self.topology_key = first["key"]
        self.parent = _opt_str(spec.get("parentCompositePodGroupName"), "spec.parentCompositePodGroupName")
        self.checkpoint = _checkpoint(meta.annotations)
        self.claim_refs, self.claim_statuses = _claims(spec, _map(obj.get("status"), "status"), kind)
        self.invalid = _invalid(_map(obj.get("status"), "status"))


class DisruptionBudget:
    __slots__ = ("allowed", "disrupted", "key", "namespace", "selector")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=True)
        spec, status = _map(obj.get("spec"), "spec"), _map(obj.get("status"), "status")
        self.key, self.namespace = meta.key, meta.namespace
        self.selector: LabelSelector = parse_label_selector(spec.get("selector"), "spec.selector")
        self.allowed = _int(status.get("disruptionsAllowed"), "status.disruptionsAllowed", minimum=0) or 0
        self.disrupted = set(_map(status.get("disruptedPods"), "status.disruptedPods"))


class PriorityClass:
    __slots__ = ("global_default", "name", "preemption_policy", "value")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=False)
        self.name = meta.name
        value = _int(obj.get("value"), "value")
        if value is None:
            raise ValueError("value: required")
        self.value = value
        self.global_default = bool(obj.get("globalDefault"))
        self.preemption_policy = _preemption_policy(obj.get("preemptionPolicy"), "preemptionPolicy")


class Workload:
    """Only validated: the engine plans from PodGroups, which carry everything a Workload templates."""

    __slots__ = ("key",)
    MAX_TEMPLATES = 8

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=True)
        spec = _map(obj.get("spec"), "spec")
        self.key = meta.key
        for field in ("podGroupTemplates", "compositePodGroupTemplates"):
            templates = spec.get(field)
            if templates is None:
                continue
            if not isinstance(templates, list):
                raise ValueError(f"spec.{field}: expected a list")
            if len(templates) > self.MAX_TEMPLATES:
                raise ValueError(
                    f"spec.{field}: at most {self.MAX_TEMPLATES} templates, got {len(templates)}"
                )
            for i, template in enumerate(templates):
                if (
                    not isinstance(template, dict)
                    or not isinstance(template.get("name"), str)
                    or not template["name"]
                ):
                    raise ValueError(f"spec.{field}[{i}].name: required")
