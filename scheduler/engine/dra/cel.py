"""DRA device selectors (CEL), evaluated with a real CEL implementation.

The library is ``common-expression-language`` (PyPI, pinned; Rust's ``cel-interpreter`` behind Python
bindings): a compiled expression runs in about 2 µs, it needs nothing else at run time, and functions
written in Python can be added, which is how the Kubernetes extensions used in device selectors are
provided here: ``quantity()`` with ``compareTo``/``isGreaterThan``/``isLessThan``/``asInteger``, and
``semver()`` with the same comparisons and ``major``/``minor``/``patch``. ``cel-python`` would have been the
other choice: it interprets in Python and brings lark, pendulum, jmespath and google-re2 along.

As in Kubernetes, ``device.attributes[domain]`` and ``device.capacity[domain]`` are empty maps for a
domain the device does not have, quantities compare as quantities, and the result must be a bool.
Anything else (an unknown function, a missing field, a result that is not a bool) is an *error*: the
device does not match and ``Selectors.errors`` says which expression failed and why, so a plan never
rests on a silent guess. Each expression is compiled once and each distinct device shape evaluated once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..resources import parse_quantity

_LITERAL = re.compile(r"\"([^\"\\]*)\"|'([^'\\]*)'")
_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


class CelError(ValueError):
    pass


def _cmp(a: Any, b: Any) -> int:
    order: int = (a > b) - (a < b)
    return order


def _semver(text: Any) -> list[int | str]:
    match = _SEMVER.match(str(text))
    if not match:
        raise CelError(f"invalid semver {text!r}")
    major, minor, patch, pre = match.groups()
    # A release sorts after its pre-releases: (…, 1, "") > (…, 0, "rc.1").
    return [int(major), int(minor), int(patch), 0 if pre else 1, pre or ""]


def _quantity(text: Any) -> int:
    try:
        return parse_quantity(str(text), milli=True)
    except ValueError as exc:
        raise CelError(str(exc)) from None


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": lambda text: _safe(_quantity, text),
    "semver": _semver,
    "isSemver": lambda text: _safe(_semver, text),
    "compareTo": _cmp,
    "isGreaterThan": lambda a, b: a > b,
    "isLessThan": lambda a, b: a < b,
    "asInteger": lambda q: q // 1000,
    "asApproximateFloat": lambda q: q / 1000,
    "major": lambda v: v[0],
    "minor": lambda v: v[1],
    "patch": lambda v: v[2],
}


def _safe(parse: Callable[[Any], object], text: Any) -> bool:
    try:
        parse(text)
    except CelError:
        return False
    return True


@lru_cache(maxsize=1024)
def _compiled(expression: str) -> tuple[Any, tuple[str, ...]]:
    import cel  # the CEL library is loaded only by snapshots that have DRA selectors

    try:
        program = cel.compile(expression)
    except Exception as exc:  # the library raises its own parse error types
        raise CelError(f"does not compile: {_one_line(exc)}") from None
    literals = tuple(a or b for a, b in _LITERAL.findall(expression))
    return program, literals


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def device_input(
    driver: str,
    attributes: dict[str, dict[str, Any]],
    capacity: dict[str, dict[str, int]],
    literals: tuple[str, ...],
) -> dict[str, Any]:
    """The ``device`` variable. Attribute values of kind version become semvers; every string literal
    of the expression that is not a domain of the device is added as an empty domain, which is how
    Kubernetes answers a lookup of an unknown domain."""
    attrs = {
        domain: {k: _semver(v[1]) if isinstance(v, tuple) else v for k, v in values.items()}
        for domain, values in attributes.items()
    }
    caps = {domain: dict(values) for domain, values in capacity.items()}
    for literal in literals:
        attrs.setdefault(literal, {})
        caps.setdefault(literal, {})
    return {"driver": driver, "attributes": attrs, "capacity": caps}


def evaluate(
    expression: str, driver: str, attributes: dict[str, dict[str, Any]], capacity: dict[str, dict[str, int]]
) -> bool:
    """Whether the device matches; ``CelError`` when the expression cannot be evaluated for it."""
    import cel

    program, literals = _compiled(expression)
    context = cel.Context(
        variables={"device": device_input(driver, attributes, capacity, literals)}, functions=_FUNCTIONS
    )
    try:
        result = program.execute(context)
    except Exception as exc:  # runtime errors of any type: unknown function, no such key, ...
        raise CelError(_one_line(exc)) from None
    if not isinstance(result, bool):
        raise CelError(f"evaluates to {type(result).__name__}, not bool")
    return result
