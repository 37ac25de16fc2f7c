"""``POST /api/v1/simulate``: a gang's plans under one or more policies, side by side with their cost;
``POST /api/v1/simulate/podgroups/``: the gangs of a snapshot (or the live cluster) one may simulate.

On the live cluster (read fresh, with the room gangweb just freed for other gangs held, as the pipeline
plans) or on an uploaded snapshot: JSON ``{"podGroup", "policies", "snapshot": <List>}``, or multipart
with the snapshot as a file (YAML or JSON, read within the bounds of ``scheduler/engine/reading.py``).
An uploaded file, and a JSON body too large to parse here, are read and planned by the snapshot worker
(``gangweb/api/v1/uploads.py``), after the guard in front of Django checked the reader before the body.
``"maps": true`` adds each plan's small map (the what-if lab's and a gang page's What if?).
Nothing is executed, recorded or published. Both read a whole snapshot and the first runs the engine per
policy, so they need a login even in the demo and share one throttle per user (``GANGWEB_SIMULATE_RATE``).
"""

from __future__ import annotations

import logging

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from gangweb.api.v1 import serializers, summaries, uploads
from gangweb.api.v1.access import SignedIn
from gangweb.api.v1.parsers import JSONParser
from gangweb.api.v1.throttling import SharedScopedRateThrottle
from gangweb.api.v1.views.base import V1View
from gangweb.clusterview import whatif
from scheduler.engine.gangkey import GangKey, split_gang_key
from scheduler.engine.reading import max_snapshot_bytes
from scheduler.preemption import planning
from scheduler.preemption.runtime import get_cluster

logger = logging.getLogger(__name__)


class ClusterUnreadable(APIException):
    status_code = 503
    default_detail = "cannot read the cluster"


class Simulating(V1View):
    """What both share: a signed-in reader, one throttle, the body's bounds, a snapshot read from it
    outside the web process (``gangweb/api/v1/uploads.py``)."""

    permission_classes = [SignedIn]
    parser_classes = [JSONParser, MultiPartParser]
    throttle_classes = [SharedScopedRateThrottle]
    throttle_scope = "simulate"
    job = ""

    def get_throttles(self):
        return [] if uploads.checked(self.request) else super().get_throttles()

    def post(self, request):
        if uploads.preflight(request):  # the upload guard asks: signed in, allowed, not throttled
            return Response(status=204)
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > max_snapshot_bytes():
            raise uploads.TooLarge(uploads.too_large_detail())
        if uploads.is_large_json(request):
            with uploads.Worker.for_body(request, self.job, self.scope) as worker:
                fields, has_snapshot = worker.fields()
                validated = self.validated(fields)
                if not has_snapshot:
                    worker.close()
                    return self.answer(validated, None)
                return self.answer(validated, worker)
        data = request.data
        upload = request.FILES.get("snapshot") if hasattr(request, "FILES") else None
        if hasattr(data, "getlist"):  # multipart: a form's fields, ``policies`` as a,b or repeated
            form = {k: v for k, v in data.items() if k != "policies" and not (upload and k == "snapshot")}
            if "policies" in data:
                form["policies"] = [p for raw in data.getlist("policies") for p in raw.split(",") if p]
            data = form
        validated = self.validated(data)
        if upload is None:
            return self.answer(validated, None)
        self.allowed(validated)  # before the snapshot is read
        fields = {k: v for k, v in validated.items() if k != "snapshot"}
        with uploads.Worker.for_file(upload, self.job, self.scope, fields) as worker:
            return self.answer(validated, worker)

    def validated(self, data) -> dict:
        raise NotImplementedError

    def allowed(self, validated: dict) -> None:
        """Refuse the reader before anything is read or planned for it."""

    def answer(self, validated: dict, worker: uploads.Worker | None) -> Response:
        """The answer on the worker's snapshot, or on the inline one, or on the live cluster."""
        raise NotImplementedError


def _inline(validated):
    """The inline snapshot's documents, or None for the live cluster."""
    if "snapshot" not in validated:
        return None
    value = validated["snapshot"]
    if not isinstance(value, dict | list):
        raise ValidationError({"snapshot": ["a List object or a list of objects"]})
    return [value]


class Simulate(Simulating):
    job = "simulate"

    @extend_schema(
        # The JSON body only: the multipart form (the same fields, the snapshot as a file; docs/api.md) is left
        # out, because openapi-python-client cannot generate an importable module for a required body of two
        # content types (its issue 1451), and a JSON body takes the same snapshot inline.
        request={"application/json": summaries.LabSimulateBody},
        responses={200: summaries.LabSimulation, 413: OpenApiResponse(serializers.Problem)},
    )
    def post(self, request):
        return super().post(request)

    def validated(self, data) -> dict:
        body = summaries.LabSimulateBody(data=data)
        body.is_valid(raise_exception=True)
        return body.validated_data

    def allowed(self, validated: dict) -> None:
        _may_simulate(self.scope, validated["podGroup"])

    def answer(self, validated, worker):
        gang_key, policies = validated["podGroup"], validated["policies"]
        self.allowed(validated)
        if worker is None:
            objects = _inline(validated)
            return Response(simulate(self.scope, gang_key, policies, objects, maps=validated["maps"]))
        fields = {"podGroup": gang_key, "policies": policies, "maps": validated["maps"]}
        return Response(_simulation(gang_key, "snapshot", worker.result(fields)))


class SimulatePodGroups(Simulating):
    """The gangs of an uploaded snapshot (or of the live cluster), before one is picked: only those in
    namespaces you may simulate in, waiting first, then by priority. Nothing is planned or recorded."""

    job = "podgroups"

    @extend_schema(
        request={"application/json": summaries.SnapshotBody, "multipart/form-data": summaries.SnapshotUpload},
        responses={200: summaries.LabPodGroups, 413: OpenApiResponse(serializers.Problem)},
    )
    def post(self, request):
        return super().post(request)

    def validated(self, data) -> dict:
        body = summaries.SnapshotBody(data=data)
        body.is_valid(raise_exception=True)
        return body.validated_data

    def answer(self, validated, worker):
        if worker is not None:
            return Response({"source": "snapshot", "podGroups": worker.result({})})
        objects = _inline(validated)
        source = "snapshot" if objects is not None else "cluster"
        try:
            # A snapshot's malformed object is a 400 naming it, as simulate's; the live cluster is as it is.
            gangs = whatif.gangs(
                objects if objects is not None else _live(None), self.scope, checked=bool(objects)
            )
        except whatif.Refused as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        return Response({"source": source, "podGroups": gangs})


def simulate(
    scope, gang_key: GangKey, policies: list[str], objects: list | None = None, *, maps: bool = False
) -> dict:
    """The plans of gang ``gang_key`` under each policy, on ``objects`` (a snapshot's) or the live cluster;
    each with its policy's line and a summary, and with ``maps`` its small map."""
    _may_simulate(scope, gang_key)
    source = "snapshot" if objects is not None else "cluster"
    if objects is None:
        objects = _live(gang_key)
    try:
        plans = whatif.plans(objects, gang_key, policies, maps=maps)
    except whatif.Refused as exc:
        if exc.missing:
            raise NotFound(str(exc)) from None
        raise ValidationError({exc.field: [str(exc)]}) from None
    return _simulation(gang_key, source, plans)


def _simulation(gang_key: GangKey, source: str, plans: list[dict]) -> dict:
    namespace, name = split_gang_key(gang_key)
    return {"podGroup": gang_key, "namespace": namespace, "name": name, "source": source, "plans": plans}


def _may_simulate(scope, gang_key: GangKey) -> None:
    namespace = split_gang_key(gang_key)[0]
    if not scope.may("simulate", namespace):
        raise PermissionDenied(f"simulate needs the viewer role in namespace {namespace}")


def _live(gang_key: GangKey | None):
    try:
        objects = planning.fresh_objects(get_cluster())
    except Exception as exc:  # an unreachable cluster is the server's problem, said in one line
        logger.warning("simulate: cannot read the cluster", exc_info=True)
        raise ClusterUnreadable(f"cannot read the cluster: {exc}") from exc
    # A gang's plan sees the room just freed for others as taken; a list of gangs sees the cluster as it is.
    return planning.reserve_room(objects, gang_key) if gang_key else objects
