"""The first API's own views, aliases of v1's: its root and ``POST /api/plan/`` (deprecated: ``/api/v1/``
and ``POST /api/v1/simulate/``). Its ledger paths are v1's views (``urls.py``); nothing here is a shape,
a filter or a query of its own but the body of ``POST /api/plan/``, kept for its old clients."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from gangweb.api.v1 import uploads
from gangweb.api.v1.access import SignedIn
from gangweb.api.v1.serializers import podgroup_key
from gangweb.api.v1.views.base import V1View
from gangweb.api.v1.views.root import Root as V1Root
from gangweb.api.v1.views.simulate import Simulate, simulate
from scheduler.engine import DEFAULT_POLICY, POLICIES


class Root(V1Root):
    pass


class WhatIfSerializer(serializers.Serializer):
    """The body of ``POST /api/plan/``: v1's ``SimulateBody`` with one policy and no snapshot."""

    podGroup = serializers.CharField(max_length=507, trim_whitespace=True)
    policy = serializers.CharField(required=False, default=DEFAULT_POLICY)

    def validate_podGroup(self, value: str) -> str:
        return podgroup_key(value)

    def validate_policy(self, value: str) -> str:
        if value not in POLICIES:
            raise serializers.ValidationError(
                f"unknown policy {value!r}; choose one of: {', '.join(sorted(POLICIES))}"
            )
        return value


class WhatIfPlanView(V1View):
    """``POST /api/plan/`` {"podGroup": "ns/name", "policy": optional}: ``POST /api/v1/simulate/`` with one
    policy on the live cluster, answered in the first API's shape (the ``gang plan`` JSON plus ``cost``)."""

    permission_classes = [SignedIn]
    throttle_classes = Simulate.throttle_classes
    throttle_scope = "simulate"

    def get_throttles(self):
        return [] if uploads.checked(self.request) else super().get_throttles()

    def post(self, request):
        if uploads.preflight(request):  # the upload guard asks: signed in, allowed, not throttled
            return Response(status=204)
        body = WhatIfSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        gang_key = body.validated_data["podGroup"]
        try:
            simulated = simulate(self.scope, gang_key, [body.validated_data["policy"]])
        except NotFound as exc:  # this deprecated path keeps its first contract: a missing gang is a 400
            raise ValidationError({"podGroup": [str(exc.detail)]}) from None
        return Response(simulated["plans"][0])
