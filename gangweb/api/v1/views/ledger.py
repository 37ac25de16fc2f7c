"""The preemption ledger, read-only: requests, plans, evictions and the history."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.response import Response

from gangweb.api.v1 import serializers
from gangweb.api.v1.queries import ledger as q
from gangweb.api.v1.views.base import V1, released


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
            _p("podgroup", "NAMESPACE/NAME"),
            _p(
                "state",
                "pending, planning, planned, executing, succeeded, failed, infeasible, superseded, observed",
            ),
            _p("mode", "enforce or observe"),
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
            _p("request", "request ids (a,b)"),
            NAMESPACE,
            _p("outcome", "fits, preempt, infeasible (every why) or infeasible:<why>"),
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
            _p("state", "planned, dry_run_ok, dry_run_refused, evicting, evicted, failed"),
            _p("pod", "NAMESPACE/NAME"),
            _p("unit", "NAMESPACE/NAME: the victim unit (a PodGroup, or a lone pod), whatever its kind"),
            _p("node", "node names"),
            _p("plan", "plan ids"),
            _p("request", "request ids"),
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
            _p("since", "only entries after this id (polling)", int),
            _p("request", "request ids"),
            _p("kind", "entry kinds (request.opened, plan.created, eviction.result, ...)"),
            _p("podgroup", "NAMESPACE/NAME"),
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
