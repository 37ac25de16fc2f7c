"""``POST /api/v1/simulate``: a gang's plans under one or more policies, side by side with their cost.

On the live cluster (read fresh, with the room gangweb just freed for other gangs held, as the pipeline
plans) or on an uploaded snapshot: JSON ``{"podGroup", "policies", "snapshot": <List>}``, or multipart
with the snapshot as a file (YAML or JSON, read within the bounds of ``scheduler/engine/reading.py``).
Nothing is executed, recorded or published. It costs an engine run per policy, so it needs a login even
in the demo and is throttled per user (``GANGWEB_SIMULATE_RATE``).
"""

from __future__ import annotations

import logging
import time

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from gangweb.api.v1 import serializers
from gangweb.api.v1.access import SignedIn
from gangweb.api.v1.views.base import V1View
from scheduler.engine import SnapshotError, parse_snapshot, read_snapshot
from scheduler.engine import plan as engine_plan
from scheduler.engine.reading import max_snapshot_bytes
from scheduler.preemption import planning
from scheduler.preemption.runtime import get_cluster

logger = logging.getLogger(__name__)


class TooLarge(APIException):
    status_code = 413
    default_detail = "request too large"


class ClusterUnreadable(APIException):
    status_code = 503
    default_detail = "cannot read the cluster"


class Simulate(V1View):
    permission_classes = [SignedIn]
    parser_classes = [JSONParser, MultiPartParser]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "simulate"

    @extend_schema(
        request=serializers.SimulateBody,
        responses={200: serializers.Simulation, 413: OpenApiResponse(serializers.Problem)},
    )
    def post(self, request):
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > max_snapshot_bytes():
            raise TooLarge(
                f"the body is larger than the {max_snapshot_bytes():,}-byte limit (GANGWEB_SNAPSHOT_MAX_BYTES)"
            )
        data = request.data
        upload = request.FILES.get("snapshot") if hasattr(request, "FILES") else None
        if upload is not None:
            data = {k: v for k, v in data.items() if k != "snapshot"}
            if "policies" in request.data and hasattr(request.data, "getlist"):
                data["policies"] = [
                    p for raw in request.data.getlist("policies") for p in raw.split(",") if p
                ]
        body = serializers.SimulateBody(data=data)
        body.is_valid(raise_exception=True)
        podgroup, policies = body.validated_data["podGroup"], body.validated_data["policies"]
        _may_simulate(self.scope, podgroup)  # before reading anything
        objects = None
        if upload is not None:
            objects = self._read_upload(upload)
        elif "snapshot" in body.validated_data:
            objects = self._inline(body.validated_data["snapshot"])
        return Response(simulate(self.scope, podgroup, policies, objects))

    @staticmethod
    def _inline(value):
        if not isinstance(value, dict | list):
            raise ValidationError({"snapshot": ["a List object or a list of objects"]})
        return [value]

    @staticmethod
    def _read_upload(upload):
        try:
            return read_snapshot(upload)
        except SnapshotError as exc:
            raise ValidationError({"snapshot": [str(exc)]}) from None


def simulate(scope, podgroup: str, policies: list[str], objects: list | None = None) -> dict:
    """The plans of ``podgroup`` under each policy, on ``objects`` (a snapshot's) or the live cluster."""
    namespace, _, name = podgroup.partition("/")
    _may_simulate(scope, podgroup)
    source = "snapshot" if objects is not None else "cluster"
    if objects is None:
        objects = _live(podgroup)
    try:
        snapshot = parse_snapshot(objects)
    except SnapshotError as exc:
        raise ValidationError({"snapshot": [str(exc)]}) from None
    plans = []
    for policy in policies:
        started = time.perf_counter()
        try:
            result = engine_plan(snapshot, podgroup, policy=policy)
        except SnapshotError as exc:
            raise ValidationError({"podGroup": [str(exc)]}) from None
        planned = planning.result_of(snapshot, result, time.perf_counter() - started)
        plans.append(
            {**planned.plan, "cost": planned.json_cost, "planningSeconds": round(planned.seconds, 6)}
        )
    return {"podGroup": podgroup, "namespace": namespace, "name": name, "source": source, "plans": plans}


def _may_simulate(scope, podgroup: str) -> None:
    namespace = podgroup.partition("/")[0]
    if not scope.may("simulate", namespace):
        raise PermissionDenied(f"simulate needs the viewer role in namespace {namespace}")


def _live(podgroup: str):
    try:
        objects = planning.fresh_objects(get_cluster())
    except Exception as exc:  # an unreachable cluster is the server's problem, said in one line
        logger.warning("simulate: cannot read the cluster", exc_info=True)
        raise ClusterUnreadable(f"cannot read the cluster: {exc}") from exc
    return planning.reserve_room(objects, podgroup)
