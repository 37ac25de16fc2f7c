"""JSON shapes of what the dashboard's pages draw, served by ``/api/v1/`` (docs/design.md "API v1"):
the GPU map in its own format (``map/``), the overview's figures and history (``overview/``), and what
the gang page adds to ``podgroups/{namespace}/{name}/``; a new shape of these pictures goes here (a
resource's in ``serializers.py``, a grouped answer's in ``summaries.py``). The answers are dicts built by
``gangweb.clusterview`` (``picture.py``, ``scoping.py``) and ``gangweb.dashboard`` (``history.py``); these
serializers describe them for the schema, and the schemathesis test holds the two together."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers as s

from gangweb.api.v1 import serializers
from gangweb.api.v1.summaries import GANG_STATES

# and "other": the one row of the squares held in namespaces the reader does not see
MAP_GANG_STATES = (*GANG_STATES, "other")


class MapDomain(s.Serializer):
    name = s.CharField(help_text="the rack label's value, else the zone's, else 'all nodes'")
    zone = s.CharField(allow_blank=True)
    first = s.IntegerField(help_text="index of its first node in `nodes`")
    count = s.IntegerField()


class MapNode(s.Serializer):
    name = s.CharField()
    domain = s.IntegerField(help_text="index into `domains`")
    ready = s.BooleanField()
    cordoned = s.BooleanField()
    gpus = s.ListField(
        child=s.IntegerField(allow_null=True),
        help_text="per device, in the node's order: the index of the gang in `gangs` holding it, or null (free)",
    )
    nominated = s.ListField(
        child=s.IntegerField(allow_null=True),
        required=False,
        help_text="per device: the gang nominated to it (kube-scheduler's nominatedNodeName), or null",
    )
    dra = s.ListField(child=s.BooleanField(), required=False, help_text="per device: a DRA device")
    devices = s.ListField(
        child=s.CharField(allow_null=True), required=False, help_text="per device: its ResourceSlice name"
    )
    mig = s.ListField(
        child=s.ListField(child=s.JSONField(), allow_null=True, min_length=2, max_length=2),
        required=False,
        help_text="per device: [parent GPU index, MIG profile] for a MIG partition, else null",
    )


# The schema keeps the component's first name: generated clients know the type by it.
@extend_schema_serializer(component_name="MapGang")
class GangOnMap(s.Serializer):
    """A gang as a row of the map: the members of one PodGroup, or a lone GPU pod (a gang of its own)."""

    key = s.CharField(help_text="NAMESPACE/NAME; '~' for the row of every namespace you do not see")
    namespace = s.CharField(allow_null=True, help_text="null: in use, other namespace")
    name = s.CharField(allow_null=True)
    otherNamespace = s.BooleanField(required=False)
    other = s.BooleanField(required=False, help_text="the nameless row of GPUs held in other namespaces")
    label = s.CharField(required=False)
    priorityClass = s.CharField(allow_blank=True)
    priority = s.IntegerField(required=False)
    tier = s.IntegerField(
        help_text="index into `tiers` (the colour by priority tier); -1 for other namespaces"
    )
    shade = s.IntegerField(help_text="the gang's shade, telling gangs of one colour apart")
    disruption = s.CharField(required=False)
    topology = s.BooleanField(required=False)
    pods = s.IntegerField(required=False)
    placed = s.IntegerField(required=False)
    minCount = s.IntegerField(required=False)
    podGpus = s.IntegerField(required=False)
    gpus = s.IntegerField(required=False)
    state = s.ChoiceField(MAP_GANG_STATES)
    waitingSeconds = s.IntegerField(required=False)
    podGroup = s.BooleanField(
        required=False,
        help_text="false: no PodGroup (a lone GPU pod, named by the pod; or pods naming a PodGroup not in the cluster)",
    )
    reason = s.CharField(required=False, help_text="a waiting gang's dominant reason, counted from this map")


class MapTier(s.Serializer):
    priorityClass = s.CharField(allow_blank=True)
    priority = s.IntegerField()
    allocatedGpus = s.IntegerField()


class MapTotals(s.Serializer):
    nodes = s.IntegerField()
    gpus = s.IntegerField()
    allocatedGpus = s.IntegerField(help_text="GPUs in use, other namespaces' included")
    freeGpus = s.IntegerField()
    cordonedGpus = s.IntegerField()
    nominatedGpus = s.IntegerField()
    runningGangs = s.IntegerField(help_text="of the gangs you see")
    waitingGangs = s.IntegerField(help_text="of the gangs you see")
    waitingGpus = s.IntegerField(help_text="GPUs the waiting gangs you see still need")
    migPartitions = s.IntegerField(required=False)


class Map(s.Serializer):
    """The GPU map: every node with a GPU, grouped by topology domain, and who holds each device."""

    seq = s.IntegerField(help_text="the `map` topic's sequence number this picture includes (ws/live/)")
    cluster = s.CharField(allow_blank=True)
    time = s.FloatField(help_text="when the cluster was read (Unix seconds)")
    note = s.CharField(required=False, help_text="why the map is empty (the cluster cannot be read)")
    domains = MapDomain(many=True)
    nodes = MapNode(many=True)
    gangs = GangOnMap(many=True)
    tiers = MapTier(many=True, help_text="empty when some GPUs are held in namespaces you do not see")
    totals = MapTotals()


class Preemptions(s.Serializer):
    preemptions = s.IntegerField(help_text="requests executed (succeeded) in the span")
    lostGpuHours = s.FloatField(help_text="the executed plans' lost GPU-hours (cost.lostGpuSeconds / 3600)")


class HistorySample(s.Serializer):
    at = s.DateTimeField()
    allocatedGpus = s.IntegerField(help_text="held by gangs you see")
    idleGpus = s.IntegerField(help_text="free (the cluster's)")
    waitingGpus = s.IntegerField(help_text="still needed by waiting gangs you see")


class Approval(s.Serializer):
    id = s.IntegerField(help_text="the request")
    namespace = s.CharField()
    name = s.CharField()
    state = s.CharField()


class Overview(s.Serializer):
    """The overview's headline figures and its chart."""

    totals = MapTotals(help_text="counted from the map (`map/`)")
    lastHour = Preemptions()
    lastDay = Preemptions()
    history = HistorySample(many=True, help_text="oldest first, one a GANGWEB_HISTORY_SECONDS")
    awaitingApproval = Approval(
        many=True, help_text="approve mode: plans waiting for an operator, oldest first"
    )


class PreemptedBy(s.Serializer):
    request = s.IntegerField(help_text="the preemptor's request")
    namespace = s.CharField(allow_null=True, help_text="the preemptor's; null: another namespace")
    name = s.CharField(allow_null=True)
    otherNamespace = s.BooleanField()
    state = s.CharField(help_text="the request's state")
    pods = s.IntegerField(help_text="this gang's pods its plans chose")
    evictedPods = s.IntegerField()
    gpus = s.IntegerField()
    at = s.DateTimeField(help_text="its newest eviction row")


class CompositeNode(s.Serializer):
    kind = s.ChoiceField(["CompositePodGroup", "PodGroup"])
    name = s.CharField()
    disruptionMode = s.ChoiceField(["single", "all"])
    minCount = s.IntegerField(help_text="minCount, or a CompositePodGroup's minGroupCount")
    gang = s.BooleanField(help_text="the page's own PodGroup")
    victimUnit = s.BooleanField(help_text="preempted as one victim unit with everything under it")
    children = s.ListField(child=s.DictField(), help_text="CompositeNode objects, by kind and name")


class PodGroupPage(serializers.PodGroupDetail):
    tier = s.IntegerField(allow_null=True, help_text="its `tier` on the map (null: not on the map)")
    shade = s.IntegerField(allow_null=True)
    nodes = s.ListField(child=s.CharField(), help_text="the nodes where it holds GPUs on the map")
    nominatedNodes = s.ListField(child=s.CharField(), help_text="nodes nominated for its waiting pods")
    preemptedBy = PreemptedBy(many=True, help_text="`asVictim` grouped per preemptor's request, newest first")
    compositeTree = CompositeNode(
        allow_null=True,
        help_text="its CompositePodGroup tree from the top ancestor down (KEP-6012); null when it has no parent",
    )
