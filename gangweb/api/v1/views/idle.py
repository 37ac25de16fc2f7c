"""``GET /api/v1/idle/``: idle GPU-hours by cause over the last hour and day, and the gangs broken now;
``GET /api/v1/idle/gpu-hours/``: the same per hour (docs/idle.md "One figure"; the samples are
``gangweb/dashboard/idle.py``'s)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from gangweb.api.v1 import params, serializers
from gangweb.api.v1.views.base import V1View
from gangweb.dashboard.idle import KEEP, figure, per_hour
from scheduler.idle import CAUSES
from scheduler.preemption.ledger.health import open_episodes


class Idle(V1View):
    """Idle GPU-hours by cause (freeWhileWaiting, brokenGangs, allocatedIdle, heldForUnplaced) over the last
    hour and day, per namespace and gang you see; the broken gangs now; the activity source's state."""

    pagination_class = None

    @extend_schema(responses=serializers.IdleFigure)
    def get(self, request):
        scope = self.scope
        answer = figure(scope)
        now = timezone.now()
        answer["broken"] = [
            {
                "namespace": e.namespace,
                "name": e.name,
                "podGroup": e.podgroup,
                "heldGpus": e.held_gpus,
                "minCount": e.min_count,
                "running": e.running,
                "causes": list(e.causes),
                "since": e.since.isoformat(),
                "brokenSeconds": int((now - e.since).total_seconds()),
                "reapedBy": e.reaped_by_id,
            }
            for e in open_episodes()
            if scope.sees(e.namespace)
        ]
        return Response(answer)


class IdleGpuHours(V1View):
    """Idle GPU-hours by cause per hour over the last ``days`` (the samples are kept two days), in the
    namespaces you see and the cluster's free GPUs, as ``idle/`` counts them."""

    query_params = ("days",)
    pagination_class = None

    @extend_schema(
        parameters=[
            params.whole_number_parameter(
                "days", f"how many days back (1-{KEEP.days}, default {KEEP.days})", least=1, most=KEEP.days
            )
        ],
        responses=serializers.IdleGpuHours,
    )
    def get(self, request):
        days = params.whole_number(request.query_params, "days", default=KEEP.days, least=1, most=KEEP.days)
        points = per_hour(self.scope, days)
        total = {cause: round(sum(p[cause] for p in points), 2) for cause in CAUSES}
        return Response({"days": days, "total": total, "points": points})
