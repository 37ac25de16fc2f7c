"""Reading gangweb's settings from the environment: each reader names the variable in its error.

``gangweb/settings.py`` is the only caller; a bad value stops the process at start-up with
``ImproperlyConfigured`` naming the variable and what it accepts, never a default in its place.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T", int, float)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_networks(name: str) -> list[str]:
    """Comma-separated IP addresses or CIDR networks (``10.0.0.0/8,192.0.2.7``), each checked."""
    import ipaddress

    networks = []
    for item in env_list(name, []):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} takes IP addresses or networks like 10.0.0.0/8, got {item!r}"
            ) from None
    return networks


def env_int(name: str, default: int) -> int:
    return _number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _number(name, default, float, "a number")


def _number(name: str, default: T, kind: Callable[[str], T], what: str) -> T:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {what}, got {value!r}") from None


def env_choice(name: str, allowed: tuple[str, ...], default: str | None = None) -> str:
    """One of ``allowed``; unset means ``default`` (the first allowed value when none is given)."""
    value = os.environ.get(name) or (allowed[0] if default is None else default)
    if value not in allowed:
        choices = ", ".join(f"'{choice}'" for choice in allowed)
        raise ImproperlyConfigured(f"{name} must be one of {choices}, got {value!r}")
    return value


def env_namespace_map(name: str, allowed: tuple[str, ...]) -> dict[str, str]:
    """``team-a=x,team-b=y`` per-namespace overrides, each value one of ``allowed``."""
    result: dict[str, str] = {}
    for item in env_list(name, []):
        namespace, sep, value = item.partition("=")
        if not sep or not namespace or value not in allowed:
            raise ImproperlyConfigured(
                f"{name} entries look like 'team-a={allowed[-1]}' with one of {'/'.join(allowed)}, got {item!r}"
            )
        result[namespace] = value
    return result


def env_namespace_numbers(name: str, example: str = "team-a=4") -> dict[str, float]:
    """``team-a=600,team-b=0`` per-namespace (or per-queue) numbers, each 0 or more; ``example`` shows an
    entry in the error."""
    result: dict[str, float] = {}
    for item in env_list(name, []):
        key, sep, value = item.partition("=")
        try:
            number = float(value) if sep and key else -1.0
        except ValueError:
            number = -1.0
        if number < 0 or number != number:
            raise ImproperlyConfigured(
                f"{name} entries look like {example!r} with a number 0 or more, got {item!r}"
            )
        result[key] = number
    return result


def env_optional_float(name: str) -> float | None:
    """A number 0 or more, or None when unset or empty."""
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    number = _number(name, 0.0, float, "a number")
    if number < 0 or number != number:
        raise ImproperlyConfigured(f"{name} must be a number 0 or more, got {value!r}")
    return number
