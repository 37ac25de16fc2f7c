"""The first API's paths (``/api/requests/``, ...), kept as aliases of v1 that say they are deprecated.

Each answer carries ``Deprecation: @<epoch>`` (RFC 9745: deprecated since that moment) and
``Link: <the v1 path>; rel="successor-version"`` (RFC 8288, RFC 5829), plus a link to the docs. Nothing
else changes: the same views answer, in v1's shapes and errors (docs/design.md "API v1").
"""

from __future__ import annotations

import calendar
from functools import wraps

from django.urls import reverse

# 2026-12-01T00:00:00Z, the day v1 came.
DEPRECATED_SINCE = calendar.timegm((2026, 12, 1, 0, 0, 0))
DOCS = "/api/docs/"


def deprecated(view, successor: str):
    """``view`` answering with the deprecation headers; ``successor`` names the v1 route (its kwargs are
    the old route's)."""

    @wraps(view)
    def answer(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        target = reverse(successor, kwargs=kwargs or None)
        response["Deprecation"] = f"@{DEPRECATED_SINCE}"
        response["Link"] = f'<{target}>; rel="successor-version", <{DOCS}>; rel="deprecation"'
        return response

    return answer
