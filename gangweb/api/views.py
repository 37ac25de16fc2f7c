"""Read-only views of the preemption ledger, and the what-if planner.

Nothing here writes: the ledger changes only through ``scheduler.preemption.ledger``, and ``POST /api/plan/``
runs the engine on a copy of the cluster's objects without executing or recording anything.
"""

from __future__ import annotations

import logging

from django.db.models import Prefetch
from rest_framework import routers, status, viewsets
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from gangweb.api import filters, serializers
from gangweb.api.permissions import ReadableLikeTheDashboard
from scheduler.engine import SnapshotError
from scheduler.preemption import planning
from scheduler.preemption.models import Eviction, LedgerEntry, Plan, PreemptionRequest
from scheduler.preemption.runtime import get_cluster

logger = logging.getLogger(__name__)


class LedgerPagination(LimitOffsetPagination):
    # ?limit= is the caller's choice up to here: one call must not serialise a whole year of history.
    max_limit = 1000


class ReadOnlyLedgerViewSet(viewsets.ReadOnlyModelViewSet):
    """Base of every ledger endpoint: readable like the dashboard, filtered from the query string."""

    permission_classes = [ReadableLikeTheDashboard]
    pagination_class = LedgerPagination
    apply_filters = staticmethod(lambda queryset, params: queryset)

    def get_queryset(self):
        queryset = self.base_queryset()
        if self.action == "list":
            queryset = self.apply_filters(queryset, self.request.query_params)
        return queryset

    def base_queryset(self):
        raise NotImplementedError


class RequestViewSet(ReadOnlyLedgerViewSet):
    """Preemption requests, newest first. Filters: ``namespace``, ``podgroup``, ``state``, ``mode``."""

    apply_filters = staticmethod(filters.filter_requests)

    def get_serializer_class(self):
        return (
            serializers.RequestDetailSerializer
            if self.action == "retrieve"
            else serializers.RequestSerializer
        )

    def base_queryset(self):
        queryset = PreemptionRequest.objects.order_by("-created_at", "-id")
        if self.action == "retrieve":
            evictions = Eviction.objects.select_related("plan").order_by("victim_unit", "namespace", "name")
            plans = (
                Plan.objects.select_related("request")
                .order_by("created_at", "id")
                .prefetch_related(Prefetch("pod_evictions", queryset=evictions))
            )
            queryset = queryset.prefetch_related(Prefetch("plans", queryset=plans))
        return queryset


class PlanViewSet(ReadOnlyLedgerViewSet):
    """Plans in the ``gang plan`` shape with their cost, newest first. Filter: ``request``."""

    apply_filters = staticmethod(filters.filter_plans)

    def get_serializer_class(self):
        return serializers.PlanDetailSerializer if self.action == "retrieve" else serializers.PlanSerializer

    def base_queryset(self):
        queryset = Plan.objects.select_related("request").order_by("-created_at", "-id")
        if self.action == "retrieve":
            queryset = queryset.prefetch_related(
                Prefetch("pod_evictions", queryset=Eviction.objects.select_related("plan"))
            )
        return queryset


class EvictionViewSet(ReadOnlyLedgerViewSet):
    """One row per victim pod per plan, newest first. Filters: ``state``, ``pod``, ``node``, ``plan``, ``request``."""

    serializer_class = serializers.EvictionSerializer
    apply_filters = staticmethod(filters.filter_evictions)

    def base_queryset(self):
        return Eviction.objects.select_related("plan").order_by("-id")


class LedgerEntryViewSet(ReadOnlyLedgerViewSet):
    """The append-only history, newest first. ``?since=<id>`` gives only what came after that entry.

    Ids grow in insert order; an entry whose transaction commits late can appear below an id a
    poller has already seen, so pollers that must miss nothing re-ask from a little below their last id.
    """

    serializer_class = serializers.LedgerEntrySerializer
    apply_filters = staticmethod(filters.filter_ledger)

    def base_queryset(self):
        return LedgerEntry.objects.order_by("-id")


class APIRootView(routers.APIRootView):
    permission_classes = [ReadableLikeTheDashboard]


class WhatIfPlanView(APIView):
    """``POST /api/plan/`` {"podGroup": "ns/name", "policy": optional}: what would it take to place it now?

    Plans on the cluster's current objects, with the room gangweb just freed for other gangs held
    for them (as the pipeline would plan), and answers the ``gang plan`` JSON plus its cost. It never
    evicts, records or publishes anything. It needs a login even in the demo: it is a POST, and each
    call costs a full engine run.
    """

    permission_classes = [IsAuthenticated]

    def post(self, request):
        body = serializers.WhatIfSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        podgroup, policy = body.validated_data["podGroup"], body.validated_data["policy"]
        try:
            objects = planning.fresh_objects(get_cluster())
        except Exception as exc:  # an unreachable cluster is the server's problem, said in one line
            logger.warning("what-if: cannot read the cluster", exc_info=True)
            return Response(
                {"detail": f"cannot read the cluster: {exc}"}, status=status.HTTP_503_SERVICE_UNAVAILABLE
            )
        try:
            result = planning.compute(planning.reserve_room(objects, podgroup), podgroup, policy)
        except SnapshotError as exc:
            return Response({"podGroup": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        cost = {
            **result.cost,
            "evicted_pods": len(result.plan.get("evictions") or []),
            "evicted_gpus": sum(facts.gpus for facts in result.pods.values()),
        }
        return Response(
            {**result.plan, "cost": serializers.cost_json(cost), "planningSeconds": round(result.seconds, 6)}
        )
