"""Label selectors, node selector requirements, taints and tolerations (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SET_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}
NODE_OPERATORS = SET_OPERATORS | {"Gt", "Lt"}


def requirement_matches(labels: Mapping[str, str], key: str, operator: str, values: Sequence[str]) -> bool:
    """One ``{key, operator, values}`` requirement (label selectors and node affinity share it)."""
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if not present:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except (ValueError, IndexError):
            return False
        return have > want if operator == "Gt" else have < want
    return False


class LabelSelector:
    """``metav1.LabelSelector``: ``{}`` matches everything; ``None`` (no selector) matches nothing."""

    __slots__ = ("expressions", "match_labels", "matches_nothing")

    def __init__(
        self,
        match_labels: dict[str, str],
        expressions: list[tuple[str, str, tuple[str, ...]]],
        matches_nothing: bool = False,
    ) -> None:
        self.match_labels = match_labels
        self.expressions = expressions
        self.matches_nothing = matches_nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        for key, value in self.match_labels.items():
            if labels.get(key) != value:
                return False
        return all(requirement_matches(labels, k, op, vals) for k, op, vals in self.expressions)


def parse_requirements(items: Any, where: str, operators: set[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError(f"{where}: expected a list")
    out = []
    for i, item in enumerate(items):
        here = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{here}: expected an object")
        key, operator, values = item.get("key"), item.get("operator"), item.get("values") or []
        if not isinstance(key, str) or not key:
            raise ValueError(f"{here}.key: required")
        if operator not in operators:
            raise ValueError(f"{here}.operator: unknown operator {operator!r}")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"{here}.values: expected a list of strings")
        if operator in ("In", "NotIn") and not values:
            raise ValueError(f"{here}.values: must not be empty for {operator}")
        if operator in ("Gt", "Lt") and len(values) != 1:
            raise ValueError(f"{here}.values: {operator} takes exactly one value")
        out.append((key, operator, tuple(values)))
    return out


def parse_label_selector(raw: Any, where: str) -> LabelSelector:
    if raw is None:
        return LabelSelector({}, [], matches_nothing=True)
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise ValueError(f"{where}.matchLabels: expected a map of strings")
    return LabelSelector(
        dict(labels),
        parse_requirements(raw.get("matchExpressions"), f"{where}.matchExpressions", SET_OPERATORS),
    )


class NodeSelectorTerm:
    """One term of required node affinity; terms are ORed, requirements inside a term ANDed."""

    __slots__ = ("expressions", "fields")

    def __init__(
        self,
        expressions: list[tuple[str, str, tuple[str, ...]]],
        fields: list[tuple[str, str, tuple[str, ...]]],
    ) -> None:
        self.expressions = expressions
        self.fields = fields

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        if not self.expressions and not self.fields:
            return False  # an empty term selects no node
        if not all(requirement_matches(labels, k, op, vals) for k, op, vals in self.expressions):
            return False
        node_fields = {"metadata.name": node_name}
        return all(requirement_matches(node_fields, k, op, vals) for k, op, vals in self.fields)


def parse_node_selector_terms(raw: Any, where: str) -> list[NodeSelectorTerm]:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    terms = raw.get("nodeSelectorTerms")
    if not isinstance(terms, list):
        raise ValueError(f"{where}.nodeSelectorTerms: expected a list")
    out = []
    for i, term in enumerate(terms):
        here = f"{where}.nodeSelectorTerms[{i}]"
        if not isinstance(term, dict):
            raise ValueError(f"{here}: expected an object")
        fields = parse_requirements(term.get("matchFields"), f"{here}.matchFields", NODE_OPERATORS)
        for key, _, _ in fields:
            if key != "metadata.name":
                raise ValueError(f"{here}.matchFields: only metadata.name is supported, got {key!r}")
        out.append(
            NodeSelectorTerm(
                parse_requirements(term.get("matchExpressions"), f"{here}.matchExpressions", NODE_OPERATORS),
                fields,
            )
        )
    return out


Taint = tuple[str, str, str]  # key, value, effect
Toleration = tuple[str, str, str, str]  # key, operator, value, effect

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    key, value, effect = taint
    for t_key, t_op, t_value, t_effect in tolerations:
        if t_effect and t_effect != effect:
            continue
        if not t_key:
            if t_op == "Exists":
                return True
            continue
        if t_key != key:
            continue
        if t_op == "Exists" or t_value == value:
            return True
    return False


def tolerates_all(tolerations: Sequence[Toleration], taints: Sequence[Taint]) -> bool:
    return all(
        effect not in BLOCKING_EFFECTS or tolerates(tolerations, (key, value, effect))
        for key, value, effect in taints
    )
