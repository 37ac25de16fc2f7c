"""Kubernetes quantities and pod requests, computed the way kube-scheduler computes them.

Every resource is an integer: ``cpu`` in millicores, everything else in its base unit (bytes,
devices, pods), rounded up like ``Quantity.Value()``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from math import ceil
from typing import Any

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL = "ephemeral-storage"

MAX_QUANTITY = 2**62  # capacities are summed in int64 arrays

_SUFFIX: dict[str, int | Decimal] = {
    "": 1,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


def parse_quantity(value: Any, *, milli: bool = False) -> int:
    """``"500m"`` -> 500 (milli) / 1; ``"16Gi"`` -> 17179869184. Raises ValueError when malformed."""
    if isinstance(value, str):
        # Snapshots repeat the same few quantities thousands of times; parsing dominates load time.
        return _parse_text_cached(value, milli)
    return _parse_quantity(value, milli)


@lru_cache(maxsize=4096)
def _parse_text_cached(value: str, milli: bool) -> int:
    return _parse_quantity(value, milli)


def _parse_quantity(value: Any, milli: bool) -> int:
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(repr(value))
    elif isinstance(value, str):
        match = _QUANTITY.match(value.strip())
        if not match:
            raise ValueError(f"invalid quantity {value!r}")
        digits, exponent, suffix = match.groups()
        try:
            number = Decimal(digits) * (
                Decimal(10) ** int(exponent[1:]) if exponent else _SUFFIX[suffix or ""]
            )
        except InvalidOperation as exc:  # pragma: no cover - regex already rules this out
            raise ValueError(f"invalid quantity {value!r}") from exc
    else:
        raise ValueError(f"invalid quantity {value!r}")
    if number < 0:
        raise ValueError(f"negative quantity {value!r}")
    result = ceil(number * 1000) if milli else ceil(number)
    if result > MAX_QUANTITY:
        raise ValueError(f"quantity {value!r} is too large")
    return result


def parse_resource_list(values: Any, where: str) -> dict[str, int]:
    """A ``ResourceList`` (name -> quantity). ``where`` names the field for error messages."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValueError(f"{where}: expected a map of resource quantities")
    out: dict[str, int] = {}
    for name, quantity in values.items():
        try:
            out[str(name)] = parse_quantity(quantity, milli=(name == CPU))
        except ValueError as exc:
            raise ValueError(f"{where}.{name}: {exc}") from None
    return out


def _container_requests(container: Any, where: str) -> dict[str, int]:
    if not isinstance(container, dict):
        raise ValueError(f"{where}: expected an object")
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        raise ValueError(f"{where}.resources: expected an object")
    requests = parse_resource_list(resources.get("requests"), f"{where}.resources.requests")
    # API defaulting copies limits into missing requests; snapshots written by hand may skip it.
    for name, quantity in parse_resource_list(resources.get("limits"), f"{where}.resources.limits").items():
        requests.setdefault(name, quantity)
    return requests


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, quantity in other.items():
        into[name] = into.get(name, 0) + quantity


def _max_into(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, quantity in other.items():
        if quantity > into.get(name, 0):
            into[name] = quantity


def _containers(spec: Mapping[str, Any], field: str) -> list[Any]:
    items = spec.get(field) or []
    if not isinstance(items, list):
        raise ValueError(f"spec.{field}: expected a list")
    return items


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective requests of a pod spec (without the implicit ``pods: 1``).

    Sum of app containers; restartable (sidecar) init containers run beside them and are added;
    each classic init container runs alone (with the sidecars started before it), so the pod needs the
    max of that and the steady state; ``spec.overhead`` comes on top. Pod-level ``spec.resources``
    requests win for the resources they name.
    """
    total: dict[str, int] = {}
    for i, container in enumerate(_containers(spec, "containers")):
        _add(total, _container_requests(container, f"spec.containers[{i}]"))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, container in enumerate(_containers(spec, "initContainers")):
        requests = _container_requests(container, f"spec.initContainers[{i}]")
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
        else:
            running = dict(sidecars)
            _add(running, requests)
            _max_into(init_peak, running)
    _max_into(total, init_peak)
    pod_level = spec.get("resources")
    if isinstance(pod_level, dict) and pod_level.get("requests"):
        total.update(parse_resource_list(pod_level.get("requests"), "spec.resources.requests"))
    _add(total, parse_resource_list(spec.get("overhead"), "spec.overhead"))
    return {name: value for name, value in total.items() if value}


def is_gpu(resource: str) -> bool:
    """Whether a resource name counts as GPUs: the one rule for the engine, the dashboard and the
    webhook. Extended resources named ``<vendor>/gpu`` (``nvidia.com/gpu``, ``amd.com/gpu``); not
    ``gpu.intel.com/i915``, ``nvidia.com/gpu.shared`` or MIG slices (``nvidia.com/mig-1g.5gb``).
    Importing this module loads neither numpy nor the rest of the engine."""
    return resource.endswith("/gpu")


def pod_gpus(pod: Mapping[str, Any]) -> int:
    """GPUs a pod holds: its effective requests (``pod_requests``) of GPU resources (``is_gpu``); a pod
    whose requests cannot be read holds none (a view must not fail on one bad object)."""
    try:
        requests = pod_requests(pod.get("spec") or {})
    except ValueError:
        return 0
    return sum(value for name, value in requests.items() if is_gpu(name))


def resource_gpus(resources: Any) -> int:
    """GPUs in a resource list (a node's allocatable); unreadable values count as none, as in ``pod_gpus``."""
    try:
        return sum(
            value for name, value in parse_resource_list(resources, "resources").items() if is_gpu(name)
        )
    except ValueError:
        return 0


def is_gpu_device(driver: str, attributes: Mapping[str, Mapping[str, Any]]) -> bool:
    """The same rule for DRA devices (ResourceSlices): a device of a driver named ``gpu.<vendor>``
    (``gpu.nvidia.com``, ``gpu.amd.com``) is a GPU unless its driver's ``type`` attribute says it is
    something else (a MIG partition, ``type: mig``, counts as no GPU, like ``nvidia.com/mig-1g.5gb``)."""
    if not driver.startswith("gpu."):
        return False
    kind = attributes.get(driver, {}).get("type")
    return kind is None or kind == "gpu"
