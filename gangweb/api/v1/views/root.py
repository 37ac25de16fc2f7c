"""``GET /api/v1/``: where everything is."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.reverse import reverse

from gangweb.api.v1.views.base import V1View

LISTS = (
    "nodes",
    "map",
    "overview",
    "podgroups",
    "pending",
    "usage",
    "idle",
    "decisions",
    "request-list",
    "plan-list",
    "eviction-list",
    "ledger-list",
)


class Root(V1View):
    """Where every list of the API v1 is: its name and its URL."""

    pagination_class = None

    @extend_schema(responses=inline_serializer("Root", {name: serializers.URLField() for name in LISTS}))
    def get(self, request):
        return Response({name: reverse(f"api:v1:{name}", request=request) for name in LISTS})
