"""Query-string filters of the list endpoints: the one home of how a parameter is read.

``values_of`` (``?a=x,y`` and ``?a=x&a=y``), ``choices_of``, ``keys_of`` (NAMESPACE/NAME) and ``ids_of`` read one
parameter for any v1 view or query; ``filter_*`` apply the ledger's to a queryset (``params.py`` describes
them for the schema).

A filter value that cannot match anything by construction (an unknown state, a pod without its
namespace, a non-numeric id) is a 400 naming the parameter, not an empty list: a typo in a
platform team's script should fail loudly.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q, QuerySet
from rest_framework.exceptions import ValidationError

from scheduler.preemption.models import EvictionState, Mode, RequestState

# What str.strip() removes, as a regular expression's class body: the schema's patterns leave these out where
# a value is trimmed (JSON Schema's \s is narrower than Python's).
SPACE = r"\s\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# The largest id a row can have (PostgreSQL bigint): a larger one matches nothing, and the database refuses it.
MAX_ID = 2**63 - 1


def values_of(params, name: str) -> list[str]:
    """``?name=a&name=b`` and ``?name=a,b`` both mean a or b. A NUL character is a 400 (no name holds one, and
    PostgreSQL refuses it in a query)."""
    values = [part.strip() for raw in params.getlist(name) for part in raw.split(",") if part.strip()]
    if any("\x00" in value for value in values):
        raise ValidationError({name: ["must not contain a NUL character"]})
    return values


def choices_of(params, name: str, allowed: Iterable[str]) -> list[str]:
    values = values_of(params, name)
    allowed = list(allowed)
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise ValidationError({name: [f"unknown value {unknown[0]!r}; choose from: {', '.join(allowed)}"]})
    return values


def keys_of(params, name: str) -> list[tuple[str, str]]:
    keys = []
    for value in values_of(params, name):
        namespace, slash, obj = value.partition("/")
        if not (slash and namespace and obj) or "/" in obj:
            raise ValidationError({name: [f"{value!r} is not NAMESPACE/NAME"]})
        keys.append((namespace, obj))
    return keys


def ids_of(params, name: str) -> list[int]:
    try:
        ids = [int(v) for v in values_of(params, name)]
    except ValueError:
        raise ValidationError({name: ["must be a whole number"]}) from None
    if any(i < 0 for i in ids):
        raise ValidationError({name: ["must not be negative"]})
    if any(i > MAX_ID for i in ids):
        raise ValidationError({name: [f"must be at most {MAX_ID}"]})
    return ids


def _any_of(
    queryset: QuerySet, keys: list[tuple[str, str]], namespace_field: str, name_field: str
) -> QuerySet:
    if not keys:
        return queryset
    match = Q()
    for namespace, name in keys:
        match |= Q(**{namespace_field: namespace, name_field: name})
    return queryset.filter(match)


def filter_requests(queryset: QuerySet, params) -> QuerySet:
    """``namespace``, ``podgroup`` (NAMESPACE/NAME), ``state``, ``mode``."""
    if namespaces := values_of(params, "namespace"):
        queryset = queryset.filter(namespace__in=namespaces)
    queryset = _any_of(queryset, keys_of(params, "podgroup"), "namespace", "name")
    if states := choices_of(params, "state", RequestState.values):
        queryset = queryset.filter(state__in=states)
    if modes := choices_of(params, "mode", Mode.values):
        queryset = queryset.filter(mode__in=modes)
    return queryset


def filter_plans(queryset: QuerySet, params) -> QuerySet:
    """``request``."""
    if requests := ids_of(params, "request"):
        queryset = queryset.filter(request_id__in=requests)
    return queryset


def filter_evictions(queryset: QuerySet, params) -> QuerySet:
    """``state``, ``pod`` (NAMESPACE/NAME), ``unit`` (NAMESPACE/NAME: the victim unit, a PodGroup or a lone
    pod, whatever its kind), ``node``, ``plan``, ``request``."""
    if states := choices_of(params, "state", EvictionState.values):
        queryset = queryset.filter(state__in=states)
    queryset = _any_of(queryset, keys_of(params, "pod"), "namespace", "name")
    if units := keys_of(params, "unit"):
        # victim_unit is "Kind namespace/name"; a unit's pods are in its namespace
        match = Q()
        for namespace, name in units:
            match |= Q(namespace=namespace, victim_unit__endswith=f" {namespace}/{name}")
        queryset = queryset.filter(match)
    if nodes := values_of(params, "node"):
        queryset = queryset.filter(node__in=nodes)
    if plans := ids_of(params, "plan"):
        queryset = queryset.filter(plan_id__in=plans)
    if requests := ids_of(params, "request"):
        queryset = queryset.filter(plan__request_id__in=requests)
    return queryset


def filter_ledger(queryset: QuerySet, params) -> QuerySet:
    """``since`` (entries after that id), ``request``, ``kind``, ``podgroup``."""
    since = ids_of(params, "since")
    if len(since) > 1:
        raise ValidationError({"since": ["give one entry id"]})
    if since:
        queryset = queryset.filter(pk__gt=since[0])
    if requests := ids_of(params, "request"):
        queryset = queryset.filter(request_id__in=requests)
    if kinds := values_of(params, "kind"):
        queryset = queryset.filter(kind__in=kinds)
    return _any_of(queryset, keys_of(params, "podgroup"), "namespace", "name")
