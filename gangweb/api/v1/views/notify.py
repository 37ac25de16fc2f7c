"""``/api/v1/notify/``: the notification sinks and their deliveries, every attempt shown (admin only:
sinks are admin data, and a delivery carries whatever its route may read; docs/notifications.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers as s
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from gangweb.api.v1.access import Reads, scope_of
from gangweb.api.v1.serializers import Problem
from gangweb.api.v1.views.base import V1View
from gangweb.notify import config
from gangweb.notify.models import DeliveryState, Sink, SinkKind
from gangweb.notify.sinks import SinkError


class Admin(Reads):
    """An admin of every namespace."""

    message = "notification sinks are admin data: this needs the admin role in every namespace"

    def has_permission(self, request, view) -> bool:
        return super().has_permission(request, view) and scope_of(request).may("admin")


class Route(s.Serializer):
    allNamespaces = s.BooleanField(default=False)
    namespaces = s.ListField(child=s.CharField(), default=list)


class SinkIn(s.Serializer):
    name = s.CharField()
    kind = s.ChoiceField(choices=SinkKind.choices)
    url = s.CharField()
    route = Route()
    kinds = s.ListField(child=s.CharField(), default=list, help_text="ledger event kinds; empty: every kind")


class SinkOut(SinkIn):
    enabled = s.BooleanField()
    createdAt = s.DateTimeField()
    deliveries = s.DictField(child=s.IntegerField(), help_text="deliveries by state")


class AttemptOut(s.Serializer):
    at = s.DateTimeField()
    seconds = s.FloatField()
    status = s.IntegerField(allow_null=True)
    ok = s.BooleanField()
    error = s.CharField(allow_blank=True)


class DeliveryOut(s.Serializer):
    id = s.IntegerField()
    sink = s.CharField()
    eventId = s.UUIDField()
    kind = s.CharField()
    state = s.ChoiceField(choices=DeliveryState.choices)
    attempts = AttemptOut(many=True)
    createdAt = s.DateTimeField()
    nextAttemptAt = s.DateTimeField(allow_null=True)
    deliveredAt = s.DateTimeField(allow_null=True)
    lastError = s.CharField(allow_blank=True)
    payload = s.DictField(help_text="the ledger event as the sink's route may read it")


DENIED = {401: OpenApiResponse(Problem), 403: OpenApiResponse(Problem)}


class Sinks(V1View):
    """Notification sinks with their routes."""

    permission_classes = [Admin]

    @extend_schema(responses={200: SinkOut(many=True), **DENIED})
    def get(self, request):
        paginator, page = self.page(Sink.objects.order_by("name"))
        return paginator.get_paginated_response([config.describe_sink(sink) for sink in page])

    @extend_schema(
        request={"application/json": SinkIn},
        responses={201: SinkOut, 400: OpenApiResponse(Problem), **DENIED},
    )
    def post(self, request):
        given = SinkIn(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        try:
            sink = config.add_sink(
                data["name"],
                kind=data["kind"],
                url=data["url"],
                namespaces=data["route"]["namespaces"],
                all_namespaces=data["route"]["allNamespaces"],
                kinds=data["kinds"],
            )
        except SinkError as exc:
            raise ValidationError({"sink": [str(exc)]}) from None
        return Response(config.describe_sink(sink), status=201)


class SinkDetail(V1View):
    """One sink; DELETE removes it with its deliveries."""

    permission_classes = [Admin]

    @extend_schema(responses={200: SinkOut, 404: OpenApiResponse(Problem), **DENIED})
    def get(self, request, name: str):
        sink = Sink.objects.filter(name=name).first()
        if sink is None:
            raise NotFound(f"no sink named {name}")
        return Response(config.describe_sink(sink))

    @extend_schema(responses={204: None, 404: OpenApiResponse(Problem), **DENIED})
    def delete(self, request, name: str):
        try:
            config.remove_sink(name)
        except SinkError as exc:
            raise NotFound(str(exc)) from None
        return Response(status=204)


class Deliveries(V1View):
    """Deliveries, newest first, each with every attempt to send it."""

    permission_classes = [Admin]
    query_params = ("sink", "state")

    @extend_schema(
        parameters=[
            OpenApiParameter("sink", str, description="one sink's name"),
            OpenApiParameter("state", str, enum=DeliveryState.values),
        ],
        responses={200: DeliveryOut(many=True), 400: OpenApiResponse(Problem), **DENIED},
    )
    def get(self, request):
        state = request.query_params.get("state")
        if state and state not in DeliveryState.values:
            raise ValidationError({"state": [f"one of {', '.join(DeliveryState.values)}"]})
        rows = config.deliveries(request.query_params.get("sink"), state)
        paginator, page = self.page(rows)
        return paginator.get_paginated_response(
            [config.describe_delivery(d, list(d.attempt_rows.all())) for d in page]
        )
