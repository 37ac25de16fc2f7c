"""Grouped answers, as the dashboard's pages draw them: the ledger one card per gang with its retries
folded and the GPU-hours lost per hour (/preemptions/), the admission decisions grouped and counted
(/decisions/).
The grouping is ``gangweb/api/v1/queries/``' (``grouped``, ``preemptions``); these views read the parameters and page the rows."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from gangweb.api.v1 import filters, params, summaries
from gangweb.api.v1.queries import decisions as kept
from gangweb.api.v1.queries import grouped as grouping
from gangweb.api.v1.queries import preemptions
from gangweb.api.v1.views.base import V1View
from gangweb.api.v1.views.cluster import DECISION_PARAMETERS
from scheduler.preemption.models import RequestState


class Preemptions(V1View):
    """The ledger one card per gang (of its newest 2,000 requests you see): its requests folded into runs
    of retries that ended alike ("infeasible x 7 since 08:13"), executed preemptions never folded; gangs
    with an execution first, then the most recent."""

    query_params = ("namespace", "gang", "state")

    @extend_schema(
        parameters=[
            OpenApiParameter("namespace", str, description="only these namespaces (a,b)"),
            OpenApiParameter("gang", str, description="the gang's name contains this (any case)"),
            params.choices_parameter(
                "state",
                RequestState.values,
                "only requests in these states (a,b): " + ", ".join(RequestState.values),
            ),
        ],
        responses=summaries.Cards,
    )
    def get(self, request):
        query = request.query_params
        if len(query.getlist("gang")) > 1:
            raise ValidationError({"gang": ["give it once"]})
        if "\x00" in query.get("gang", ""):
            raise ValidationError({"gang": ["must not contain a NUL character"]})
        rows = preemptions.cards(
            self.scope,
            namespaces=filters.values_of(query, "namespace"),
            gang=query.get("gang", "").strip(),
            states=filters.choices_of(query, "state", RequestState.values),
        )
        paginator, page = self.page(rows)
        return paginator.get_paginated_response(page)


class LostGpuHours(V1View):
    """GPU-hours lost per hour to the executed preemptions you see (a preemption belongs to the namespace
    of the gang it placed), over the last ``days``."""

    query_params = ("days",)
    pagination_class = None

    @extend_schema(
        parameters=[
            params.whole_number_parameter("days", "how many days back (1-30, default 2)", least=1, most=30)
        ],
        responses=summaries.LostGpuHours,
    )
    def get(self, request):
        days = params.whole_number(request.query_params, "days", default=2, least=1, most=30)
        points = preemptions.lost_over_time(self.scope, days=days)
        total = round(sum(p["lostGpuHours"] for p in points), 2)
        return Response({"days": days, "totalGpuHours": total, "points": points})


class DecisionGroups(V1View):
    """The kept admission decisions (``decisions/``) grouped by webhook, outcome, gang and reason, denials
    first, then the most recent."""

    query_params = kept.PARAMS

    @extend_schema(parameters=DECISION_PARAMETERS, responses=summaries.DecisionGroups)
    def get(self, request):
        rows = grouping.grouped(kept.asked(self.scope, request.query_params))["results"]
        paginator, page = self.page(rows)
        return paginator.get_paginated_response(page)


class DecisionSummary(V1View):
    """The kept admission decisions counted: how many, how many denied, and by the source each gang was
    inferred from (most first); the same parameters as ``decisions/``."""

    query_params = kept.PARAMS
    pagination_class = None

    @extend_schema(parameters=DECISION_PARAMETERS, responses=summaries.DecisionSummary)
    def get(self, request):
        return Response(grouping.counted(kept.asked(self.scope, request.query_params)))
