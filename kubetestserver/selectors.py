"""Label and field selector query strings, as the API server applies them to list and watch.

A PDB's ``LabelSelector`` object is matched by ``scheduler.kube.budgets.label_selector_matches``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Predicate = Callable[[dict], bool]


class SelectorError(ValueError):
    pass


_SET_TERM = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*$")


def _split_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def parse_label_selector(text: str | None) -> Predicate:
    """A ``labelSelector`` query string (``a=b,c!=d,e in (f,g),!h``) as a predicate on objects."""
    if not text:
        return lambda obj: True
    checks: list[Callable[[dict[str, str]], bool]] = []
    for term in _split_terms(text):
        if m := _SET_TERM.match(term):
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
            if op == "in":
                checks.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                checks.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif m := _EQ_TERM.match(term):
            key, op, value = m.groups()
            if op == "!=":
                checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif m := _EXISTS_TERM.match(term):
            negate, key = m.group(1) == "!", m.group(2)
            checks.append(lambda labels, k=key, n=negate: (k in labels) != n)
        else:
            raise SelectorError(f"unable to parse requirement: {term!r}")

    def matches(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return matches


def _field_value(obj: dict, path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def parse_field_selector(text: str | None) -> Predicate:
    """A ``fieldSelector`` (``spec.nodeName=n1,status.phase!=Failed``) over dotted object paths."""
    if not text:
        return lambda obj: True
    checks = []
    for term in _split_terms(text):
        m = _EQ_TERM.match(term)
        if not m:
            raise SelectorError(f"invalid field selector term: {term!r}")
        path, op, value = m.groups()
        checks.append((path, op == "!=", value))
    return lambda obj: all((_field_value(obj, p) == v) != neg for p, neg, v in checks)
