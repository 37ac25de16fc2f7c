"""Typed views of the ``resource.k8s.io/v1`` objects (DRA) and of the claim fields of pods and PodGroups.

Each constructor raises ``ValueError("field: problem")``; ``snapshot.py`` prefixes the object name, as
for the other kinds (``typed_objects.py``). Only what planning needs is kept; the rest of each object is
checked for shape where the engine reads it. How devices become capacity is ``devices.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..resources import parse_quantity
from ..selectors import NodeSelectorTerm, parse_node_selector_terms
from ..typed_objects import Meta, _int, _map, _opt_str

EXACT_COUNT, ALL_DEVICES = "ExactCount", "All"
MAX_GROUP_CLAIMS = 4  # PodGroup spec.resourceClaims (KEP-5729)
EXTENDED_RESOURCE_CLAIM = "resource.kubernetes.io/extended-resource-claim"


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected a list")
    return value


def _required_str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: required")
    return value


def _node_scope(raw: Mapping[str, Any], where: str, *, allow_none: bool) -> tuple[str, Any]:
    """Exactly one of ``nodeName``, ``nodeSelector``, ``allNodes`` (the slice's, or one device's):
    ("node", name) | ("selector", terms) | ("all", None) | ("none", None)."""
    if "nodeName" not in raw and "nodeSelector" not in raw and "allNodes" not in raw:
        present = []  # most devices: the slice says where they are
    else:
        present = [f for f in ("nodeName", "nodeSelector", "allNodes") if raw.get(f) not in (None, False, "")]
    if len(present) > 1:
        raise ValueError(f"{where.rstrip('.')}: only one of nodeName, nodeSelector, allNodes may be set")
    if not present:
        if allow_none:
            return "none", None
        raise ValueError(
            f"{where.rstrip('.')}: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection is required"
        )
    field = present[0]
    if field == "nodeName":
        return "node", _required_str(raw["nodeName"], f"{where}nodeName")
    if field == "nodeSelector":
        return "selector", parse_node_selector_terms(raw["nodeSelector"], f"{where}nodeSelector")
    if raw["allNodes"] is not True:
        raise ValueError(f"{where}allNodes: expected true")
    return "all", None


class Device:
    """One device of a slice: its attributes grouped by domain (as CEL sees them), capacity in milli
    units, where it is reachable, and whether a NoSchedule/NoExecute taint keeps it from allocation."""

    __slots__ = ("attributes", "capacity", "driver", "name", "pool", "scope", "tainted")

    def __init__(self, raw: Any, where: str, driver: str, pool: str, scope: tuple[str, Any] | None) -> None:
        raw = _map(raw, where)
        if "basic" in raw:  # v1beta1 spelling: the fields sat one level down
            raw = {**_map(raw["basic"], f"{where}.basic"), "name": raw.get("name")}
        self.name = _required_str(raw.get("name"), f"{where}.name")
        self.driver, self.pool = driver, pool
        self.attributes: dict[str, dict[str, Any]] = {}
        for key, value in _map(raw.get("attributes"), f"{where}.attributes").items():
            domain, _, attr = str(key).rpartition("/")
            self.attributes.setdefault(domain or driver, {})[attr] = _attribute(
                value, f"{where}.attributes[{key}]"
            )
        self.capacity: dict[str, dict[str, int]] = {}
        for key, value in _map(raw.get("capacity"), f"{where}.capacity").items():
            domain, _, name = str(key).rpartition("/")
            here = f"{where}.capacity[{key}].value"
            quantity = _map(value, f"{where}.capacity[{key}]").get("value")
            try:
                self.capacity.setdefault(domain or driver, {})[name] = parse_quantity(quantity, milli=True)
            except ValueError as exc:
                raise ValueError(f"{here}: {exc}") from None
        own = _node_scope(raw, f"{where}.", allow_none=scope is not None)
        self.scope: tuple[str, Any] = scope if scope is not None and own[0] == "none" else own
        if scope is not None and own[0] != "none":
            raise ValueError(f"{where}: per-device node selection needs spec.perDeviceNodeSelection: true")
        self.tainted = False
        for i, taint in enumerate(_list(raw.get("taints"), f"{where}.taints")):
            taint = _map(taint, f"{where}.taints[{i}]")
            _required_str(taint.get("key"), f"{where}.taints[{i}].key")
            effect = taint.get("effect")
            if effect not in ("NoSchedule", "NoExecute", "None"):
                raise ValueError(f"{where}.taints[{i}].effect: unknown effect {effect!r}")
            self.tainted = self.tainted or effect != "None"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    def signature(self, names_in: str | None = None) -> tuple[object, ...]:
        """Devices with the same signature match the same selectors (CEL is evaluated once each). With
        ``names_in`` (the expressions' text), only the attributes and capacities named there count."""

        def kept(values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
            return tuple(sorted((k, v) for k, v in values.items() if names_in is None or k in names_in))

        return (
            self.driver,
            tuple(sorted((d, kept(a)) for d, a in self.attributes.items())),
            tuple(sorted((d, kept(c)) for d, c in self.capacity.items())),
        )


_ATTRIBUTE_TYPES = {"int": int, "bool": bool, "string": str}


def _attribute(raw: Any, where: str) -> Any:
    if type(raw) is dict and len(raw) == 1:  # the common case, checked fast: {"string": "..."}
        ((kind, item),) = raw.items()
        if type(item) is _ATTRIBUTE_TYPES.get(kind):
            return item
    value = _map(raw, where)
    present = [k for k in ("int", "bool", "string", "version") if k in value]
    if len(present) != 1:
        raise ValueError(f"{where}: exactly one of int, bool, string, version is required")
    kind, item = present[0], value[present[0]]
    expected, named = {
        "int": (int, "an integer"),
        "bool": (bool, "a boolean"),
        "string": (str, "a string"),
        "version": (str, "a semantic version"),
    }[kind]
    if not isinstance(item, expected) or (kind == "int" and isinstance(item, bool)):
        raise ValueError(f"{where}.{kind}: expected {named}")
    return ("version", item) if kind == "version" else item


class ResourceSlice:
    __slots__ = ("devices", "driver", "generation", "key", "name", "pool")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=False)
        spec = _map(obj.get("spec"), "spec")
        self.key = self.name = meta.name
        self.driver = _required_str(spec.get("driver"), "spec.driver")
        pool = _map(spec.get("pool"), "spec.pool")
        self.pool = _required_str(pool.get("name"), "spec.pool.name")
        self.generation = _int(pool.get("generation"), "spec.pool.generation", minimum=0, maximum=2**63) or 0
        per_device = spec.get("perDeviceNodeSelection") is True
        scope = None if per_device else _node_scope(spec, "spec.", allow_none=False)
        if per_device and _node_scope(spec, "spec.", allow_none=True)[0] != "none":
            raise ValueError("spec: perDeviceNodeSelection excludes nodeName, nodeSelector and allNodes")
        self.devices = [
            Device(d, f"spec.devices[{i}]", self.driver, self.pool, scope)
            for i, d in enumerate(_list(spec.get("devices"), "spec.devices"))
        ]


class Selector:
    """A CEL device selector: its expression and where it was written (for reasons)."""

    __slots__ = ("expression", "where")

    def __init__(self, expression: str, where: str) -> None:
        self.expression, self.where = expression, where


def _selectors(raw: Any, where: str) -> tuple[Selector, ...]:
    out = []
    for i, item in enumerate(_list(raw, where)):
        cel = _map(_map(item, f"{where}[{i}]").get("cel"), f"{where}[{i}].cel")
        out.append(Selector(_required_str(cel.get("expression"), f"{where}[{i}].cel.expression"), where))
    return tuple(out)


class DeviceClass:
    __slots__ = ("extended_resource", "key", "name", "selectors")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=False)
        spec = _map(obj.get("spec"), "spec")
        self.key = self.name = meta.name
        self.selectors = _selectors(spec.get("selectors"), "spec.selectors")
        self.extended_resource = _opt_str(spec.get("extendedResourceName"), "spec.extendedResourceName")


class Request:
    """One ``exactly`` request (or the first alternative of ``firstAvailable``): class, selectors,
    ExactCount with a count or All, and whether it only watches (adminAccess consumes no device)."""

    __slots__ = ("admin", "alternatives", "capacity", "class_name", "count", "mode", "name", "selectors")

    def __init__(self, raw: Mapping[str, Any], where: str, name: str, alternatives: int = 0) -> None:
        self.name, self.alternatives = name, alternatives
        self.class_name = _required_str(raw.get("deviceClassName"), f"{where}.deviceClassName")
        self.selectors = _selectors(raw.get("selectors"), f"{where}.selectors")
        self.mode = raw.get("allocationMode") or EXACT_COUNT
        if self.mode not in (EXACT_COUNT, ALL_DEVICES):
            raise ValueError(f"{where}.allocationMode: must be ExactCount or All, got {self.mode!r}")
        count = _int(raw.get("count"), f"{where}.count", minimum=1)
        if self.mode == ALL_DEVICES and count is not None:
            raise ValueError(f"{where}.count: must not be set with allocationMode All")
        self.count = count or 1
        self.admin = bool(raw.get("adminAccess"))
        self.capacity = bool(_map(raw.get("capacity"), f"{where}.capacity").get("requests"))


class ClaimSpec:
    """``ResourceClaimSpec``: the requests, and what the engine does not model (constraints, capacity)."""

    __slots__ = ("constraints", "requests")

    def __init__(self, raw: Any, where: str) -> None:
        devices = _map(_map(raw, where).get("devices"), f"{where}.devices")
        self.requests: list[Request] = []
        names = set()
        for i, item in enumerate(_list(devices.get("requests"), f"{where}.devices.requests")):
            here = f"{where}.devices.requests[{i}]"
            item = _map(item, here)
            name = _required_str(item.get("name"), f"{here}.name")
            if name in names:
                raise ValueError(f"{here}.name: duplicate request name {name!r}")
            names.add(name)
            if ("exactly" in item) == ("firstAvailable" in item):
                raise ValueError(f"{here}: exactly one of exactly, firstAvailable is required")
            if "exactly" in item:
                self.requests.append(
                    Request(_map(item["exactly"], f"{here}.exactly"), f"{here}.exactly", name)
                )
                continue
            subs = _list(item["firstAvailable"], f"{here}.firstAvailable")
            if not subs:
                raise ValueError(f"{here}.firstAvailable: at least one subrequest is required")
            parsed = [
                Request(_map(s, f"{here}.firstAvailable[{j}]"), f"{here}.firstAvailable[{j}]", name)
                for j, s in enumerate(subs)
            ]
            parsed[0].alternatives = len(parsed) - 1
            self.requests.append(parsed[0])
        self.constraints = len(_list(devices.get("constraints"), f"{where}.devices.constraints"))


class Consumer:
    __slots__ = ("kind", "name", "uid")

    def __init__(self, raw: Any, where: str) -> None:
        raw = _map(raw, where)
        resource = _required_str(raw.get("resource"), f"{where}.resource")
        group = raw.get("apiGroup") or ""
        self.kind = {("", "pods"): "Pod", ("scheduling.k8s.io", "podgroups"): "PodGroup"}.get(
            (group, resource), f"{group}/{resource}"
        )
        self.name = _required_str(raw.get("name"), f"{where}.name")
        self.uid = _required_str(raw.get("uid"), f"{where}.uid")


class ResourceClaim:
    __slots__ = ("allocated", "extended", "key", "name", "namespace", "node_terms", "reserved_for", "spec")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=True)
        status = _map(obj.get("status"), "status")
        self.key, self.name, self.namespace = meta.key, meta.name, meta.namespace
        self.spec = ClaimSpec(obj.get("spec"), "spec")
        self.extended = meta.annotations.get(EXTENDED_RESOURCE_CLAIM) == "true"
        allocation = _map(status.get("allocation"), "status.allocation")
        results = _list(
            _map(allocation.get("devices"), "status.allocation.devices").get("results"),
            "status.allocation.devices.results",
        )
        self.allocated: list[tuple[str, str, str]] = []
        for i, result in enumerate(results):
            here = f"status.allocation.devices.results[{i}]"
            result = _map(result, here)
            _required_str(result.get("request"), f"{here}.request")
            if result.get("adminAccess"):
                continue  # admin access watches a device without holding it
            driver, pool, device = (
                _required_str(result.get(f), f"{here}.{f}") for f in ("driver", "pool", "device")
            )
            self.allocated.append((driver, pool, device))
        self.node_terms: list[NodeSelectorTerm] | None = None
        if allocation.get("nodeSelector") is not None:
            self.node_terms = parse_node_selector_terms(
                allocation["nodeSelector"], "status.allocation.nodeSelector"
            )
        self.reserved_for = [
            Consumer(c, f"status.reservedFor[{i}]")
            for i, c in enumerate(_list(status.get("reservedFor"), "status.reservedFor"))
        ]

    @property
    def is_allocated(self) -> bool:
        return bool(self.allocated) or self.node_terms is not None


class ResourceClaimTemplate:
    __slots__ = ("key", "spec")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        meta = Meta(obj.get("metadata"), namespaced=True)
        spec = _map(obj.get("spec"), "spec")
        self.key = meta.key
        self.spec = ClaimSpec(spec.get("spec"), "spec.spec")


class ClaimRef:
    """An entry of a pod's or a PodGroup's ``spec.resourceClaims``: a name and exactly one source."""

    __slots__ = ("claim", "name", "template")

    def __init__(self, raw: Any, where: str) -> None:
        raw = _map(raw, where)
        self.name = _required_str(raw.get("name"), f"{where}.name")
        self.claim = _opt_str(raw.get("resourceClaimName"), f"{where}.resourceClaimName")
        self.template = _opt_str(raw.get("resourceClaimTemplateName"), f"{where}.resourceClaimTemplateName")
        if (self.claim is None) == (self.template is None):
            raise ValueError(
                f"{where}: exactly one of resourceClaimName, resourceClaimTemplateName is required"
            )

    def same(self, other: ClaimRef) -> bool:
        return (self.name, self.claim, self.template) == (other.name, other.claim, other.template)


def parse_claim_refs(
    spec: Mapping[str, Any], status: Mapping[str, Any], *, limit: int | None = None
) -> tuple[list[ClaimRef], dict[str, str]]:
    """``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (name -> generated claim name)."""
    refs = [
        ClaimRef(r, f"spec.resourceClaims[{i}]")
        for i, r in enumerate(_list(spec.get("resourceClaims"), "spec.resourceClaims"))
    ]
    if limit is not None and len(refs) > limit:
        raise ValueError(f"spec.resourceClaims: at most {limit} entries, got {len(refs)}")
    if len({r.name for r in refs}) != len(refs):
        raise ValueError("spec.resourceClaims: names must be unique")
    generated: dict[str, str] = {}
    for i, item in enumerate(_list(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses")):
        here = f"status.resourceClaimStatuses[{i}]"
        item = _map(item, here)
        name = _required_str(item.get("name"), f"{here}.name")
        claim = _opt_str(item.get("resourceClaimName"), f"{here}.resourceClaimName")
        if claim:
            generated[name] = claim
    return refs, generated


def object_claims(
    spec: Mapping[str, Any], status: Mapping[str, Any], kind: str
) -> tuple[list[ClaimRef], dict[str, str]]:
    """A pod's or a PodGroup's claim references and generated claim names (``typed_objects``)."""
    refs, statuses = parse_claim_refs(spec, status, limit=None if kind == "Pod" else MAX_GROUP_CLAIMS)
    if kind == "Pod":
        check_container_claims(spec, {r.name for r in refs})
    return refs, statuses


def check_container_claims(spec: Mapping[str, Any], names: set[str]) -> None:
    """Containers' ``resources.claims[].name`` must name an entry of the pod's ``spec.resourceClaims``."""
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            resources = _map(
                _map(container, f"spec.{field}[{i}]").get("resources"), f"spec.{field}[{i}].resources"
            )
            for j, claim in enumerate(_list(resources.get("claims"), f"spec.{field}[{i}].resources.claims")):
                here = f"spec.{field}[{i}].resources.claims[{j}]"
                name = _required_str(_map(claim, here).get("name"), f"{here}.name")
                if name not in names:
                    raise ValueError(f"{here}.name: {name!r} is not in spec.resourceClaims")
