"""JSON shapes of answers counted or grouped over many rows (docs/design.md "API v1"): preemption cards
and the GPU-hours lost (``/preemptions/``), decision groups (``/decisions/``), and the what-if lab's gangs
and small maps (``/what-if/``, a gang page's What if?). A new shape of that kind goes here; a resource's
row, detail or body in ``serializers.py``, the map's and overview's pictures in ``page_serializers.py``.
The rows are dicts built by ``gangweb/api/v1/queries/`` (``preemptions``, ``grouped``) and
``gangweb/clusterview/whatif.py``; these describe them for the schema (schemathesis holds them together)."""

from __future__ import annotations

from rest_framework import serializers as s

from gangweb.api.v1.queries.grouped import NAMED_PODS
from gangweb.api.v1.serializers import (
    SIMULATION_SOURCES,
    SimulateBody,
    SimulatedPlan,
    Simulation,
    SnapshotField,
)
from scheduler.preemption.models import RequestState

SQUARES = ("free", "held", "victim", "placed", "victim placed")
GANG_STATES = ("running", "partial", "waiting")  # a gang as the GPU map says it (docs/dashboard.md)


def paged(item: s.Serializer, name: str) -> type[s.Serializer]:
    """A page of ``item``: ``{"count", "next", "previous", "results"}``."""
    fields = {
        "count": s.IntegerField(),
        "next": s.URLField(allow_null=True),
        "previous": s.URLField(allow_null=True),
        "results": item,
    }
    return type(name, (s.Serializer,), fields)


# --- /api/v1/preemptions/ ----------------------------------------------------------------------------


class CardPlan(s.Serializer):
    policy = s.CharField()
    feasible = s.BooleanField()
    domain = s.CharField(allow_null=True)
    evictedPods = s.IntegerField()
    evictedGpus = s.IntegerField()
    victimUnits = s.IntegerField()
    lostGpuHours = s.FloatField()
    optimality = s.CharField(
        allow_null=True, help_text="proven, or heuristic:<why>; null for plans from before it was recorded"
    )
    estimatedLostGpuHours = s.FloatField(help_text="the plan's estimate of the work its evictions lose")
    realisedLostGpuHours = s.FloatField(
        allow_null=True, help_text="what its evictions really lost, once evicted; null: none evicted yet"
    )
    noticeDeadline = s.DateTimeField(
        allow_null=True, help_text="its victims' notice ran until then; null: none"
    )
    noticeWithdrawn = s.BooleanField(help_text="the notice was withdrawn: nobody was evicted")
    summary = s.CharField(help_text="what it evicted, in counted words")
    victims = s.ListField(child=s.CharField(), help_text="NAMESPACE/NAME of each victim unit")


class Run(s.Serializer):
    state = s.ChoiceField(RequestState.choices)
    reason = s.CharField(allow_blank=True, help_text="the latest request's of the run")
    why = s.CharField(
        allow_blank=True, help_text="what the run's requests share: the plan's outcome, else the reason"
    )
    count = s.IntegerField(help_text="requests folded into the run")
    since = s.DateTimeField()
    until = s.DateTimeField()
    firstRequest = s.IntegerField()
    lastRequest = s.IntegerField()
    executed = s.BooleanField(help_text="an executed preemption is never folded")
    mode = s.CharField()
    plan = CardPlan(allow_null=True)


class Card(s.Serializer):
    namespace = s.CharField()
    name = s.CharField()
    podGroup = s.CharField()
    requests = s.IntegerField()
    executed = s.IntegerField()
    state = s.ChoiceField(RequestState.choices, help_text="the newest request's")
    latestAt = s.DateTimeField()
    retryAt = s.DateTimeField(allow_null=True, help_text="when gangweb may open its next request")
    runs = Run(many=True, help_text="newest first")


Cards = paged(Card(many=True), "PreemptionCards")


class LostPoint(s.Serializer):
    at = s.DateTimeField(help_text="the hour's start")
    lostGpuHours = s.FloatField()


class LostGpuHours(s.Serializer):
    days = s.IntegerField()
    totalGpuHours = s.FloatField()
    points = LostPoint(many=True, help_text="oldest first; hours without an executed preemption left out")


# --- /api/v1/decisions/groups/ -------------------------------------------------------------------------


class DecisionGroup(s.Serializer):
    webhook = s.CharField(allow_null=True)
    outcome = s.ChoiceField(("allowed", "denied"))
    reason = s.CharField(allow_blank=True, help_text="a denial's message; blank when allowed")
    namespace = s.CharField()
    name = s.CharField(allow_null=True, help_text="the gang the pods were put in; null: none")
    podGroup = s.CharField(allow_null=True, help_text="NAMESPACE/NAME of that gang")
    count = s.IntegerField()
    latest = s.CharField(allow_null=True, help_text="when the newest was kept")
    pods = s.ListField(child=s.CharField(), help_text=f"the pods' names, the newest {NAMED_PODS}")


class SourceCount(s.Serializer):
    source = s.CharField()
    count = s.IntegerField()


DecisionGroups = paged(DecisionGroup(many=True), "DecisionGroups")


class DecisionSummary(s.Serializer):
    decisions = s.IntegerField()
    denied = s.IntegerField()
    bySource = SourceCount(
        many=True, help_text="decisions by the source their gang was inferred from, most first"
    )


# --- /api/v1/simulate/ -----------------------------------------------------------------------------------


class PlanMapNode(s.Serializer):
    name = s.CharField()
    squares = s.ListField(child=s.ChoiceField(SQUARES), help_text="one a GPU, in the node's order")


class LabPlan(SimulatedPlan):
    about = s.CharField(allow_blank=True, help_text="the policy in one line")
    summary = s.CharField(help_text="what it evicts, in counted words")
    map = PlanMapNode(
        many=True,
        required=False,
        help_text="with maps: the nodes it evicts on or places on, each GPU's square",
    )


class LabSimulation(Simulation):
    plans = LabPlan(many=True)


class LabSimulateBody(SimulateBody):
    maps = s.BooleanField(default=False, help_text="each plan's small map of its nodes (`map`)")


class SnapshotBody(s.Serializer):
    snapshot = SnapshotField(required=False)


class SnapshotUpload(s.Serializer):
    """The multipart form of ``simulate/podgroups/`` (the schema's; the view reads it as ``SnapshotBody``)."""

    snapshot = s.FileField(
        required=False, help_text="the snapshot file, YAML or JSON; absent: the live cluster"
    )


class LabPodGroup(s.Serializer):
    namespace = s.CharField()
    name = s.CharField()
    podGroup = s.CharField()
    state = s.ChoiceField(GANG_STATES)
    priority = s.IntegerField()
    priorityClass = s.CharField(allow_null=True)
    gpus = s.IntegerField()


class LabPodGroups(s.Serializer):
    source = s.ChoiceField(SIMULATION_SOURCES)
    podGroups = LabPodGroup(
        many=True, help_text="waiting first, then by priority; only those you may simulate"
    )
