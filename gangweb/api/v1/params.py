"""Query parameters: every one validated, and a page of at most ``MAX_LIMIT`` rows.

``?limit=abc``, ``?offset=-1``, an unknown filter value (``?kind=nope``) or a parameter the endpoint
does not know is a 400 naming the parameter, never a silently ignored value or an empty list. The value
helpers are the ledger API's (``gangweb/api/v1/filters.py``), so both read ``?a=x,y`` the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

from gangweb.api.v1.filters import MAX_ID, SPACE

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# Understood by every endpoint: the page, and DRF's own format switch (the browsable API).
COMMON = frozenset({"limit", "offset", "format"})


def whole_number(params, name: str, *, default: int, least: int, most: int | None = None) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    if len(params.getlist(name)) > 1:
        raise ValidationError({name: ["give it once"]})
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValidationError({name: [f"{raw!r} is not a whole number"]}) from None
    if value < least:
        raise ValidationError({name: [f"must be at least {least}"]})
    if most is not None and value > most:
        raise ValidationError({name: [f"must be at most {most}"]})
    return value


class Page(LimitOffsetPagination):
    """``{"count", "next", "previous", "results"}``; ``limit`` 1..1000 (default 100), ``offset`` >= 0."""

    default_limit = DEFAULT_LIMIT
    max_limit = MAX_LIMIT

    def get_limit(self, request) -> int:
        return whole_number(request.query_params, "limit", default=DEFAULT_LIMIT, least=1, most=MAX_LIMIT)

    def get_offset(self, request) -> int:
        return whole_number(request.query_params, "offset", default=0, least=0, most=MAX_ID)

    def get_schema_operation_parameters(self, view):
        bounds = {"limit": {"minimum": 1, "maximum": MAX_LIMIT}, "offset": {"minimum": 0, "maximum": MAX_ID}}
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters


def only_known(params, known: Iterable[str]) -> None:
    """A 400 for a parameter the endpoint does not read (a typo must not widen the answer)."""
    allowed = COMMON | set(known)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValidationError(
            {unknown[0]: [f"unknown parameter; this endpoint reads: {', '.join(sorted(allowed))}"]}
        )


# What each parameter accepts, stated in the schema (clients and schemathesis read it): every limit the
# helpers above and gangweb/api/v1/filters.py enforce.
_KEY = rf"[^{SPACE}/,\x00]+/[^{SPACE}/,\x00]+"
_ID = r"[0-9]{1,18}"  # within PostgreSQL's bigint (filters.MAX_ID)


def _list_of(item: str) -> str:
    return rf"^{item}(,{item})*$"


def object_keys_parameter(name: str, description: str = "NAMESPACE/NAME", *, many: bool = True):
    """``NAMESPACE/NAME`` (``a/b,c/d`` with ``many``), as ``filters.keys_of`` reads it."""
    pattern = _list_of(_KEY) if many else rf"^{_KEY}$"
    return OpenApiParameter(name, str, description=description, pattern=pattern)


def choices_parameter(name: str, values: Iterable[str], description: str):
    """One or more of ``values`` (``a,b``), as ``filters.choices_of`` reads them."""
    item = "(" + "|".join(sorted(re.escape(v) for v in values)) + ")"
    return OpenApiParameter(name, str, description=description, pattern=_list_of(item))


def ids_parameter(name: str, description: str):
    """Whole numbers >= 0 (``1,2``), as ``filters.ids_of`` reads them."""
    return OpenApiParameter(name, str, description=description, pattern=_list_of(_ID))


def whole_number_parameter(name: str, description: str, *, least: int, most: int | None = None):
    """One whole number within ``least``..``most``, as ``whole_number`` reads it."""
    schema = {"type": "integer", "minimum": least}
    if most is not None:
        schema["maximum"] = most
    return OpenApiParameter(name, schema, description=description)
