"""The live cluster, read through ``get_cluster`` (``gangweb/clusterview/rows.py``): nodes, PodGroups, the queue of
waiting gangs, GPU usage, and the admission decisions."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from gangweb.api.v1 import filters, page_serializers, params, serializers
from gangweb.api.v1.queries import composites, decisions, ledger, nodes, pending, queues, usage
from gangweb.api.v1.views import pages
from gangweb.api.v1.views.base import V1View, released
from gangweb.clusterview import rows as cluster_rows
from scheduler.engine.gangkey import gang_key_of

STATES = serializers.PODGROUP_STATES
# ``?sort=``: the /gangs/ page's orders; each ends in namespace/name so a page boundary is stable.
SORTS = {
    "name": lambda r: (r["namespace"], r["name"]),
    "waiting": lambda r: (-r["waitingSeconds"], r["namespace"], r["name"]),
    "priority": lambda r: (-r["priority"], r["namespace"], r["name"]),
    "gpus": lambda r: (-r["gpus"], r["namespace"], r["name"]),
}


DECISION_PARAMETERS = [
    OpenApiParameter("namespace", str, description="one namespace"),
    params.object_keys_parameter("podgroup", "NAMESPACE/NAME of the gang the pod was put in", many=False),
    OpenApiParameter("allowed", bool, description="only allowed (true) or refused (false)"),
]


def _paged(serializer):
    return serializer(many=True)


class Nodes(V1View):
    """GPUs per node: total, held by whom (names hidden for namespaces you do not see), free, cordoned."""

    query_params = ("cordoned",)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "cordoned", bool, description="only cordoned (true) or schedulable (false) nodes"
            )
        ],
        responses=_paged(serializers.Node),
    )
    def get(self, request):
        rows = cluster_rows.nodes(self.scope)
        if (raw := request.query_params.get("cordoned")) is not None:
            if raw not in ("true", "false"):
                raise ValidationError({"cordoned": ["true or false"]})
            rows = [r for r in rows if r["cordoned"] == (raw == "true")]
        paginator, page = self.page(rows)
        return paginator.get_paginated_response(page)


class NodeDetail(V1View):
    """One node: labels, taints, conditions, the pods on it, its GPUs and DRA devices (the GPU map's
    squares of it). Pods of namespaces you do not see are only counted, their GPUs held by no name."""

    @extend_schema(responses=serializers.NodeDetail)
    def get(self, request, name: str):
        found = nodes.node(self.scope, name)
        if found is None:
            raise NotFound(f"no node {name}")
        return Response(found)


class PodGroups(V1View):
    """PodGroups with their state, priority, minCount against placed pods, waiting time, the dominant
    reason in plain words, and gangweb's verdict (its last request, that request's outcome, when it retries)."""

    query_params = ("namespace", "state", "priorityClass", "queue", "q", "sort")

    @extend_schema(
        parameters=[
            OpenApiParameter("namespace", str, description="only these namespaces (a,b)"),
            params.choices_parameter("state", STATES, ", ".join(STATES)),
            OpenApiParameter(
                "priorityClass",
                str,
                description=f"only these priority classes (a,b; {usage.NO_CLASS!r} for none)",
            ),
            OpenApiParameter(
                "queue", str, description="only the gangs in these queues (SYSTEM/NAME,...; docs/queues.md)"
            ),
            OpenApiParameter("q", str, description="NAMESPACE/NAME contains this (any case)"),
            OpenApiParameter(
                "sort",
                str,
                enum=list(SORTS),
                description="name (namespace, name; the default), waiting (longest first), priority or gpus "
                "(highest first)",
            ),
        ],
        responses=_paged(serializers.PodGroup),
    )
    def get(self, request):
        query = request.query_params
        rows = cluster_rows.podgroups(self.scope)
        if namespaces := filters.values_of(query, "namespace"):
            rows = [r for r in rows if r["namespace"] in namespaces]
        if states := filters.choices_of(query, "state", STATES):
            rows = [r for r in rows if r["state"] in states]
        if classes := filters.values_of(query, "priorityClass"):
            rows = [r for r in rows if (r["priorityClass"] or usage.NO_CLASS) in classes]
        waits = queues.current_waits()
        rows = [{**r, "queue": queues.gang_queue(waits, r["podGroup"])} for r in rows]
        if wanted := filters.values_of(query, "queue"):
            rows = [
                r for r in rows if r["queue"] and f"{r['queue']['system']}/{r['queue']['name']}" in wanted
            ]
        if len(query.getlist("q")) > 1 or len(query.getlist("sort")) > 1:
            raise ValidationError({"q" if len(query.getlist("q")) > 1 else "sort": ["give it once"]})
        if search := query.get("q", "").strip().lower():
            rows = [r for r in rows if search in r["podGroup"].lower()]
        if (order := query.get("sort")) is not None:
            if order not in SORTS:
                raise ValidationError({"sort": [f"unknown value {order!r}; choose from: {', '.join(SORTS)}"]})
            rows = sorted(rows, key=SORTS[order])
        paginator, page = self.page(rows)
        verdict = ledger.verdicts(gang_key_of(r["namespace"], r["name"]) for r in page)
        return paginator.get_paginated_response([_public(r, verdict.get(r["podGroup"]), waits) for r in page])


def _public(row: dict, verdict: dict | None, waits) -> dict:
    out = {k: v for k, v in row.items() if k not in ("invalid", "waitingSince", "labels")}
    out["queue"] = queues.gang_queue(waits, row["podGroup"])
    out["blocker"] = queues.gang_blocker(waits, row, verdict)
    out["verdict"] = verdict
    return out


class PodGroupDetail(V1View):
    """One PodGroup: its members and their nodes, conditions, admission decisions, its preemption
    history as preemptor and as victim (also grouped per preemptor), and how the GPU map shows it."""

    @extend_schema(responses=page_serializers.PodGroupPage)
    def get(self, request, namespace: str, name: str):
        found = cluster_rows.podgroup(self.scope, namespace, name)
        if found is None:
            raise NotFound(f"no PodGroup {namespace}/{name} that you may see")
        row, view = found
        gang_key = gang_key_of(namespace, name)
        members = sorted(view.members.get(gang_key, []), key=lambda m: m["name"])
        verdict = ledger.verdicts([gang_key]).get(gang_key)
        history = ledger.history_of(namespace, name, [m["name"] for m in members])
        context = {"request": request}
        body = {
            **_public(row, verdict, queues.current_waits()),
            "members": [
                {k: m[k] for k in ("namespace", "name", "node", "phase", "gpus", "deleting")} for m in members
            ],
            "conditions": [
                {
                    k: c[k]
                    for k in ("type", "status", "reason", "message", "lastTransitionTime")
                    if c.get(k) is not None
                }
                for c in view.conditions.get(gang_key, [])
            ],
            "decisions": decisions.decisions(self.scope, gang_key=gang_key)[:50],
            "asPreemptor": released(serializers.Request(history["asPreemptor"], many=True, context=context)),
            "asVictim": released(serializers.Eviction(history["asVictim"], many=True, context=context)),
            "preemptedBy": pages.preempted_by(history["asVictim"]),
            "compositeTree": composites.composite_tree(view.reading.objects, namespace, name),
            **pages.gang_on_map(gang_key),
        }
        return Response(body)


class PendingQueue(V1View):
    """Waiting gangs in the order gangweb would serve them, with their position (docs/design.md "API v1")."""

    query_params = ("namespace",)

    @extend_schema(
        parameters=[OpenApiParameter("namespace", str, description="only these namespaces (a,b)")],
        responses=_paged(serializers.Pending),
    )
    def get(self, request):
        rows = pending.pending(self.scope)
        if namespaces := filters.values_of(request.query_params, "namespace"):
            rows = [r for r in rows if r["namespace"] in namespaces]
        paginator, page = self.page(rows)
        return paginator.get_paginated_response(page)


class Usage(V1View):
    """GPUs by namespace and priority tier, now and over the last samples (``points``, newest first)."""

    query_params = ("points",)
    pagination_class = None

    @extend_schema(
        parameters=[
            params.whole_number_parameter(
                "points", "how many past samples (0-360, default 60)", least=0, most=360
            )
        ],
        responses=serializers.Usage,
    )
    def get(self, request):
        points = params.whole_number(request.query_params, "points", default=60, least=0, most=360)
        return Response(usage.usage(self.scope, points=points))


class Decisions(V1View):
    """The admission webhook's latest decisions (the newest 5,000 kept), newest first."""

    query_params = decisions.PARAMS

    @extend_schema(parameters=DECISION_PARAMETERS, responses=_paged(serializers.Decision))
    def get(self, request):
        rows = decisions.asked(self.scope, request.query_params)
        paginator, page = self.page(rows)
        return paginator.get_paginated_response(page)
