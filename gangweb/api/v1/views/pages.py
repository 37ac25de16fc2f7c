"""What the dashboard's pages draw, as API v1 answers: the GPU map in its own format (``map/``), the
overview's headline figures and chart (``overview/``), and the map's view of one gang that its page
shows beside ``podgroups/{namespace}/{name}/`` (``gang_on_map``, ``preempted_by``).

The map is the live picture (``gangweb.dashboard.live.current``: the one the ticker keeps and the
``map`` topic's deltas apply to), cut to the reader exactly as the stream cuts its deltas
(``gangweb.clusterview.scoping``): squares of gangs in namespaces the reader does not see are drawn as
"in use, other namespace", one nameless row. Its JSON and gzip are made once per picture and cut
(``encoded_map``), not per request: at 5,000 nodes they are 1.2 MB and 64 KB, and encoding them on
each page load beside the ticker's build took a loaded machine 0.3-0.6 s. The whole cluster's cut is
made as soon as a picture is kept, in the thread that kept it (``live.on_picture_kept``).
"""

from __future__ import annotations

import gzip
import re
import threading
from datetime import UTC, datetime
from typing import Any

import orjson
from django.conf import settings
from django.http import HttpResponse
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from gangweb.access.scope import DEMO_READER, Scope
from gangweb.api.v1 import page_serializers, params
from gangweb.api.v1.views.base import V1View
from gangweb.clusterview import scoping
from gangweb.clusterview.redact import redact
from gangweb.dashboard import history, live, overview
from scheduler.engine.gangkey import GangKey


def _map(scope: Scope) -> dict[str, Any]:
    picture, seq = live.current()
    return {**scoping.cut_picture(picture, scope), "seq": seq}


_encoded_lock = threading.Lock()
# The picture (and its seq) the encodings are of, and per cut (``scoping.cut_key``) its JSON and gzip.
_encoded: dict[str, Any] = {"of": None, "cuts": {}}
ACCEPTS_GZIP = re.compile(r"\bgzip\b")
EVERYTHING = DEMO_READER  # a reader of every namespace: the cut of every such reader


def encoded_map(scope: Scope) -> tuple[bytes, bytes]:
    """``map/`` as the reader gets it (cut, redacted), as JSON and gzipped, made once per picture and cut."""
    picture, seq = live.current()
    of, cut = (picture, seq), scoping.cut_key(scope)
    with _encoded_lock:
        if _encoded["of"] is None or _encoded["of"][0] is not picture or _encoded["of"][1] != seq:
            _encoded["of"], _encoded["cuts"] = of, {}
        found = _encoded["cuts"].get(cut)
    if found is not None:
        return found
    body = orjson.dumps(redact({**scoping.cut_picture(picture, scope), "seq": seq}, scope))
    found = (body, gzip.compress(body, compresslevel=6, mtime=0))
    with _encoded_lock:
        if _encoded["of"] is of:
            _encoded["cuts"][cut] = found
    return found


live.on_picture_kept(lambda: encoded_map(EVERYTHING))


class Map(V1View):
    """The GPU map: nodes by topology domain, the gang holding each device (an index into ``gangs``),
    gangs with their tier, shade, state and reason, and the ``map`` sequence number the live stream
    (``ws/live/``) continues from."""

    pagination_class = None

    @extend_schema(responses=page_serializers.Map)
    def get(self, request):
        if request.accepted_renderer.format != "json":  # the browsable API's page
            return Response(_map(self.scope))
        body, packed = encoded_map(self.scope)
        if ACCEPTS_GZIP.search(request.headers.get("Accept-Encoding", "")):
            answer = HttpResponse(packed, content_type="application/json")
            answer["Content-Encoding"] = "gzip"
        else:
            answer = HttpResponse(body, content_type="application/json")
        patch_vary_headers(answer, ("Accept-Encoding",))
        return answer


class Overview(V1View):
    """Headline figures (the map's totals; preemptions and GPU-hours lost in the last hour and day),
    the allocated / idle / waiting GPUs over time, and the plans waiting for approval."""

    query_params = ("points",)
    pagination_class = None

    @extend_schema(
        parameters=[
            params.whole_number_parameter(
                "points",
                "how many past samples, newest kept (0-GANGWEB_HISTORY_KEEP, default 720)",
                least=0,
                most=settings.GANGWEB_HISTORY_KEEP,
            )
        ],
        responses=page_serializers.Overview,
    )
    def get(self, request):
        points = params.whole_number(
            request.query_params, "points", default=720, least=0, most=settings.GANGWEB_HISTORY_KEEP
        )
        scope = self.scope
        picture = _map(scope)
        figures = overview.preemption_figures(scope)
        series = history.series(scope, limit=points) if points else {"t": []}
        samples = [
            {
                "at": datetime.fromtimestamp(t, UTC).isoformat(),
                "allocatedGpus": series["allocated"][i],
                "idleGpus": series["idle"][i],
                "waitingGpus": series["waiting"][i],
            }
            for i, t in enumerate(series["t"])
        ]
        return Response(
            {
                "totals": picture["totals"],
                "lastHour": figures["hour"],
                "lastDay": figures["day"],
                "history": samples,
                "awaitingApproval": overview.waiting_approvals(scope),
            }
        )


def gang_on_map(gang_key: GangKey) -> dict[str, Any]:
    """The gang as the map shows it: its tier and shade, the nodes where it holds GPUs and those nominated
    for its waiting pods. The caller has checked that the reader sees the gang's namespace, and the cut
    changes none of these, so the picture is read as it is."""
    picture, _ = live.current()
    index = next((i for i, g in enumerate(picture["gangs"]) if g["key"] == gang_key), None)
    if index is None:
        return {"tier": None, "shade": None, "nodes": [], "nominatedNodes": []}
    row = picture["gangs"][index]
    held = [n["name"] for n in picture["nodes"] if index in n["gpus"]]
    nominated = [n["name"] for n in picture["nodes"] if index in (n.get("nominated") or ())]
    return {"tier": row["tier"], "shade": row["shade"], "nodes": held, "nominatedNodes": nominated}


def preempted_by(evictions) -> list[dict[str, Any]]:
    """``asVictim``'s eviction rows (newest first) grouped per preemptor's request: one row a request,
    each pod counted once however many of its plans chose it."""
    rows: dict[int, dict[str, Any]] = {}
    pods: dict[int, dict[str, tuple[int, bool]]] = {}
    for e in evictions:
        request = e.plan.request
        row = rows.setdefault(
            request.pk,
            {
                "request": request.pk,
                "namespace": request.namespace,
                "name": request.name,
                "otherNamespace": False,
                "state": request.state,
                "at": e.created_at,
            },
        )
        row["at"] = max(row["at"], e.created_at)
        seen = pods.setdefault(request.pk, {})
        gpus, evicted = seen.get(e.name, (0, False))
        seen[e.name] = (max(gpus, e.gpus), evicted or e.state == "evicted")
    for pk, row in rows.items():
        row["pods"] = len(pods[pk])
        row["evictedPods"] = sum(1 for _, evicted in pods[pk].values() if evicted)
        row["gpus"] = sum(gpus for gpus, _ in pods[pk].values())
        row["at"] = row["at"].isoformat()
    return sorted(rows.values(), key=lambda r: r["at"], reverse=True)
