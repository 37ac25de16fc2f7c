"""``POST /api/v1/simulate``: a gang's plans under one or more policies, side by side with their cost;
``POST /api/v1/simulate/podgroups/``: the gangs of a snapshot (or the live cluster) one may simulate.

On the live cluster (read fresh, with the room gangweb just freed for other gangs held, as the pipeline
plans) or on an uploaded snapshot: JSON ``{"podGroup", "policies", "snapshot": <List>}``, or multipart
with the snapshot as a file (YAML or JSON, read within the bounds of ``scheduler/engine/reading.py``).
``"maps": true`` adds each plan's small map (the what-if lab's and a gang page's What if?).
Nothing is executed, recorded or published. Both read a whole snapshot and the first runs the engine per
policy, so they need a login even in the demo and share one throttle per user (``GANGWEB_SIMULATE_RATE``).
"""

from __future__ import annotations

import logging
import time

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle

from gangweb.api.v1 import serializers, summaries
from gangweb.api.v1.access import SignedIn
from gangweb.api.v1.views.base import V1View
from gangweb.dashboard.queries import whatif
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


class Simulating(V1View):
    """What both share: a signed-in reader, one throttle, the body's bounds, a snapshot read from it."""

    permission_classes = [SignedIn]
    parser_classes = [JSONParser, MultiPartParser]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "simulate"

    def body(self, request, serializer):
        """The validated body and the uploaded snapshot's file (None: inline or the live cluster)."""
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > max_snapshot_bytes():
            raise TooLarge(
                f"the body is larger than the {max_snapshot_bytes():,}-byte limit (GANGWEB_SNAPSHOT_MAX_BYTES)"
            )
        data = request.data
        upload = request.FILES.get("snapshot") if hasattr(request, "FILES") else None
        if hasattr(data, "getlist"):  # multipart: a form's fields, ``policies`` as a,b or repeated
            form = {k: v for k, v in data.items() if k != "policies" and not (upload and k == "snapshot")}
            if "policies" in data:
                form["policies"] = [p for raw in data.getlist("policies") for p in raw.split(",") if p]
            data = form
        body = serializer(data=data)
        body.is_valid(raise_exception=True)
        return body.validated_data, upload

    def snapshot(self, validated, upload):
        """The uploaded or inline snapshot's documents, or None for the live cluster."""
        if upload is not None:
            return self._read_upload(upload)
        if "snapshot" in validated:
            return self._inline(validated["snapshot"])
        return None

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


class Simulate(Simulating):
    @extend_schema(
        request=summaries.LabSimulateBody,
        responses={200: summaries.LabSimulation, 413: OpenApiResponse(serializers.Problem)},
    )
    def post(self, request):
        validated, upload = self.body(request, summaries.LabSimulateBody)
        podgroup, policies = validated["podGroup"], validated["policies"]
        _may_simulate(self.scope, podgroup)  # before reading anything
        objects = self.snapshot(validated, upload)
        return Response(simulate(self.scope, podgroup, policies, objects, maps=validated["maps"]))


class SimulatePodGroups(Simulating):
    """The gangs of an uploaded snapshot (or of the live cluster), before one is picked: only those in
    namespaces you may simulate in, waiting first, then by priority. Nothing is planned or recorded."""

    @extend_schema(
        request=summaries.SnapshotBody,
        responses={200: summaries.LabPodGroups, 413: OpenApiResponse(serializers.Problem)},
    )
    def post(self, request):
        validated, upload = self.body(request, summaries.SnapshotBody)
        objects = self.snapshot(validated, upload)
        source = "snapshot" if objects is not None else "cluster"
        if objects is None:
            objects = _live(None)
        try:
            if source == "snapshot":
                parse_snapshot(objects)  # a malformed object is a 400 naming it, as simulate's
            gangs = whatif.gangs_of(objects, self.scope)
        except SnapshotError as exc:
            raise ValidationError({"snapshot": [str(exc)]}) from None
        return Response({"source": source, "podGroups": gangs})


def simulate(
    scope, podgroup: str, policies: list[str], objects: list | None = None, *, maps: bool = False
) -> dict:
    """The plans of ``podgroup`` under each policy, on ``objects`` (a snapshot's) or the live cluster;
    each with its policy's line and a summary, and with ``maps`` its small map."""
    namespace, _, name = podgroup.partition("/")
    _may_simulate(scope, podgroup)
    source = "snapshot" if objects is not None else "cluster"
    if objects is None:
        objects = _live(podgroup)
    try:
        snapshot = parse_snapshot(objects)
    except SnapshotError as exc:
        raise ValidationError({"snapshot": [str(exc)]}) from None
    picture = whatif.picture_of(objects) if maps else None
    plans = []
    for policy in policies:
        started = time.perf_counter()
        try:
            result = engine_plan(snapshot, podgroup, policy=policy)
        except SnapshotError as exc:
            raise ValidationError({"podGroup": [str(exc)]}) from None
        planned = planning.result_of(snapshot, result, time.perf_counter() - started)
        row = {
            **planned.plan,
            "cost": planned.json_cost,
            "planningSeconds": round(planned.seconds, 6),
            "about": whatif.about(policy),
            "summary": whatif.summary(planned.plan, planned.pods),
        }
        if picture is not None:
            row["map"] = whatif.small_map(picture, planned.plan, planned.pods)
        plans.append(row)
    return {"podGroup": podgroup, "namespace": namespace, "name": name, "source": source, "plans": plans}


def _may_simulate(scope, podgroup: str) -> None:
    namespace = podgroup.partition("/")[0]
    if not scope.may("simulate", namespace):
        raise PermissionDenied(f"simulate needs the viewer role in namespace {namespace}")


def _live(podgroup: str | None):
    try:
        objects = planning.fresh_objects(get_cluster())
    except Exception as exc:  # an unreachable cluster is the server's problem, said in one line
        logger.warning("simulate: cannot read the cluster", exc_info=True)
        raise ClusterUnreadable(f"cannot read the cluster: {exc}") from exc
    # A gang's plan sees the room just freed for others as taken; a list of gangs sees the cluster as it is.
    return planning.reserve_room(objects, podgroup) if podgroup else objects
