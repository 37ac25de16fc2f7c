"""``/api/v1/queues/`` and ``/api/v1/queues/{system}/{name}/``: the queues of Kueue, Volcano, KAI and
YuniKorn, cut to the reader (docs/queues.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers as s
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from gangweb.api.v1.queries import queues
from gangweb.api.v1.views.base import V1View


class Figures(s.Serializer):
    guaranteed = s.FloatField()
    limit = s.FloatField(allow_null=True)
    used = s.FloatField()
    borrowed = s.FloatField()
    lent = s.FloatField()


class PendingGang(s.Serializer):
    podGroup = s.CharField(help_text="NAMESPACE/NAME")
    position = s.IntegerField(allow_null=True, help_text="1: the next the system takes")


class QueueRow(s.Serializer):
    system = s.ChoiceField(choices=["kueue", "volcano", "kai", "yunikorn"])
    kind = s.CharField()
    name = s.CharField()
    parent = s.CharField(allow_null=True)
    weight = s.FloatField(allow_null=True)
    resources = s.DictField(child=Figures(), help_text="gpu (devices), cpu (cores), memory (bytes)")
    share = s.DictField(help_text="the system's own figures, and gangweb's (docs/queues.md)")
    pending = PendingGang(many=True)


class Queues(V1View):
    """Every queue the reader may see (docs/queues.md "Who sees which queue"), in tree order per system,
    paged like every list of the API (``results``: the rows of ``gang queues --json``)."""

    @extend_schema(responses=QueueRow(many=True))
    def get(self, request):
        paginator, page = self.page(queues.queues(self.scope))
        return paginator.get_paginated_response(page)


class QueueDetail(V1View):
    """One queue by system and name (a Kueue LocalQueue's name is NAMESPACE/NAME)."""

    @extend_schema(responses=QueueRow)
    def get(self, request, system: str, name: str):
        found = queues.queue(self.scope, system, name)
        if found is None:
            raise NotFound(f"no {system} queue {name} that you may see")
        return Response(found)
