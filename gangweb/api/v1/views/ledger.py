"""The preemption ledger, read-only: requests, plans, evictions and the history."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.response import Response

from gangweb.api.v1 import params, serializers
from gangweb.api.v1.queries import ledger as q
from gangweb.api.v1.views.base import V1, released
from scheduler.preemption.models import EvictionState, Mode, RequestState


def _p(name: str, text: str, kind=str) -> OpenApiParameter:
    return OpenApiParameter(name, kind, description=text)


class LedgerViewSet(V1, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    def get_queryset(self):
        listing = self.action == "list"
        return self.rows(self.request.query_params if listing else None, detail=not listing)

    def rows(self, params, detail: bool):
        raise NotImplementedError

    # DRF's list and retrieve, with the serializer released (``released``: its rows die with the answer).
    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(released(self.get_serializer(page, many=True)))

    def retrieve(self, request, *args, **kwargs):
        return Response(released(self.get_serializer(self.get_object())))


NAMESPACE = _p("namespace", "only these namespaces (a,b)")


@extend_schema_view(
    list=extend_schema(
        parameters=[
            NAMESPACE,
            params.object_keys_parameter("podgroup"),
            params.choices_parameter("state", RequestState.values, ", ".join(RequestState.values)),
            params.choices_parameter("mode", Mode.values, " or ".join(Mode.values)),
        ]
    )
)
class RequestViewSet(LedgerViewSet):
    """Preemption requests, newest first."""

    query_params = q.REQUEST_PARAMS

    def get_serializer_class(self):
        return serializers.RequestDetail if self.action == "retrieve" else serializers.Request

    def rows(self, params, detail):
        return q.requests(self.scope, params, detail=detail)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            params.ids_parameter("request", "request ids (a,b)"),
            NAMESPACE,
            OpenApiParameter(
                "outcome",
                str,
                description="fits, preempt, infeasible (every why) or infeasible:<why>",
                pattern=r"^(fits|preempt|infeasible(:[^,]*)?)(,(fits|preempt|infeasible(:[^,]*)?))*$",
            ),
        ]
    )
)
class PlanViewSet(LedgerViewSet):
    """Plans in the ``gang plan`` shape with their cost, newest first."""

    query_params = q.PLAN_PARAMS

    def get_serializer_class(self):
        return serializers.PlanDetail if self.action == "retrieve" else serializers.Plan

    def rows(self, params, detail):
        return q.plans(self.scope, params, detail=detail)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            params.choices_parameter("state", EvictionState.values, ", ".join(EvictionState.values)),
            params.object_keys_parameter("pod"),
            params.object_keys_parameter(
                "unit", "NAMESPACE/NAME: the victim unit (a PodGroup, or a lone pod), whatever its kind"
            ),
            _p("node", "node names"),
            params.ids_parameter("plan", "plan ids"),
            params.ids_parameter("request", "request ids"),
            _p("namespace", "the evicted pods' namespaces"),
        ]
    )
)
class EvictionViewSet(LedgerViewSet):
    """One row per victim pod per plan, newest first; a row belongs to the evicted pod's namespace."""

    serializer_class = serializers.Eviction
    query_params = q.EVICTION_PARAMS

    def rows(self, params, detail):
        return q.evictions(self.scope, params)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            params.whole_number_parameter(
                "since", "only entries after this id (polling)", least=0, most=params.MAX_ID
            ),
            params.ids_parameter("request", "request ids"),
            params.choices_parameter(
                "kind", q.KNOWN_KINDS, "entry kinds (request.opened, plan.created, eviction.result, ...)"
            ),
            params.object_keys_parameter("podgroup"),
            NAMESPACE,
        ]
    )
)
class LedgerEntryViewSet(LedgerViewSet):
    """The append-only history, newest first. ``?since=<id>`` gives only what came after that entry."""

    serializer_class = serializers.LedgerEntrySerializer
    query_params = q.LEDGER_PARAMS

    def rows(self, params, detail):
        return q.ledger(self.scope, params)
