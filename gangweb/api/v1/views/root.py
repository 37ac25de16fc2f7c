"""``GET /api/v1/``: where everything is, and what the cluster serves of the workload APIs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.reverse import reverse

from gangweb.api.v1.views.base import V1View
from scheduler.cluster import ClusterError
from scheduler.preemption.runtime import get_cluster
from scheduler.served import served_by

LISTS = (
    "nodes",
    "map",
    "overview",
    "podgroups",
    "pending",
    "usage",
    "idle",
    "decisions",
    "request-list",
    "plan-list",
    "eviction-list",
    "ledger-list",
)

Kubernetes = inline_serializer(
    "Kubernetes",
    {
        "source": serializers.ChoiceField(["discovery", "simulation"], required=False),
        "podGroups": serializers.BooleanField(required=False),
        "workloads": serializers.BooleanField(required=False),
        "compositePodGroups": serializers.BooleanField(required=False),
        "jobScheduling": serializers.BooleanField(
            allow_null=True, required=False, help_text="WorkloadWithJob; null when the gates are unreadable"
        ),
        "features": serializers.DictField(child=serializers.BooleanField(), required=False),
        "limits": serializers.ListField(
            child=serializers.CharField(), help_text="what gangweb cannot do on this cluster, in words"
        ),
        "error": serializers.CharField(required=False, help_text="why discovery could not be read"),
    },
)


def kubernetes() -> dict:
    """Discovery's answer (docs/kubernetes-versions.md); the same for every reader: it names no object."""
    try:
        return served_by(get_cluster()).as_dict()
    except ClusterError as exc:
        return {"limits": [], "error": str(exc)}


class Root(V1View):
    """Where every list of the API v1 is: its name and its URL."""

    pagination_class = None

    @extend_schema(
        responses=inline_serializer(
            "Root", {**{name: serializers.URLField() for name in LISTS}, "kubernetes": Kubernetes}
        )
    )
    def get(self, request):
        links = {name: reverse(f"api:v1:{name}", request=request) for name in LISTS}
        return Response({**links, "kubernetes": kubernetes()})
