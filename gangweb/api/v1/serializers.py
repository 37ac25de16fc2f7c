"""JSON shapes of the API v1's resources: one row of a ledger kind (models, camelCase like the ``gang
plan`` contract of docs/design.md) or of a cluster kind (dicts built by ``queries``, described here for the
schema; the schemathesis test holds the two together), its list and its detail, and the request bodies.

Which module takes a new shape (docs/api.md "Where a new endpoint goes"): a resource's row, detail or body
goes here; an answer counted or grouped over many rows (cards, groups, what-if maps) in ``summaries.py``;
the dashboard's map and overview pictures in ``page_serializers.py``. The first API has no shapes of its own
(``gangweb/api/urls.py`` serves its paths with these)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers as s

from gangweb.api.v1.access import scope_of
from gangweb.api.v1.filters import SPACE
from gangweb.api.v1.queries.decision import decision
from scheduler.engine import DEFAULT_POLICY, POLICIES
from scheduler.engine.gangkey import GangKey, gang_key_of, parse_gang_key
from scheduler.preemption import actors, models
from scheduler.preemption.models import LedgerEntry, PlanSource
from scheduler.preemption.planning import COST_KEYS, cost_json
from scheduler.queues.blockers import CODES as BLOCKER_CODES
from scheduler.queues.managers import SYSTEMS

PODGROUP_STATES = ("running", "running-partly", "pending", "short", "broken", "empty", "invalid")


class Eviction(s.ModelSerializer):
    url = s.HyperlinkedIdentityField(view_name="api:v1:eviction-detail")
    request = s.IntegerField(source="plan.request_id", read_only=True)
    plan = s.IntegerField(source="plan_id", read_only=True)
    pod = s.CharField(read_only=True)
    podUid = s.CharField(source="pod_uid")
    victimUnit = s.CharField(source="victim_unit")
    dryRunCode = s.IntegerField(source="dry_run_code", allow_null=True)
    dryRunMessage = s.CharField(source="dry_run_message")
    apiCode = s.IntegerField(source="api_code", allow_null=True)
    apiMessage = s.CharField(source="api_message")
    createdAt = s.DateTimeField(source="created_at")
    dryRunAt = s.DateTimeField(source="dry_run_at", allow_null=True)
    requestedAt = s.DateTimeField(source="requested_at", allow_null=True)
    finishedAt = s.DateTimeField(source="finished_at", allow_null=True)
    estimatedLostGpuSeconds = s.FloatField(
        source="estimated_lost_gpu_seconds",
        read_only=True,
        allow_null=True,
        help_text="the plan's estimate for this pod: its GPUs x time since its unit's last checkpoint",
    )
    workSince = s.DateTimeField(
        source="work_since",
        read_only=True,
        allow_null=True,
        help_text="when its unsaved work began: max(start, last checkpoint) as last read",
    )
    lostGpuSeconds = s.FloatField(
        source="lost_gpu_seconds",
        read_only=True,
        allow_null=True,
        help_text="really lost once evicted: GPUs x (eviction time - workSince); null: not evicted",
    )

    class Meta:
        model = models.Eviction
        fields = [
            "id",
            "url",
            "request",
            "plan",
            "pod",
            "namespace",
            "name",
            "podUid",
            "node",
            "gpus",
            "victimUnit",
            "state",
            "attempts",
            "dryRunCode",
            "dryRunMessage",
            "apiCode",
            "apiMessage",
            "createdAt",
            "dryRunAt",
            "requestedAt",
            "finishedAt",
            "estimatedLostGpuSeconds",
            "workSince",
            "lostGpuSeconds",
        ]
        read_only_fields = fields


class Notice(s.Serializer):
    """A plan's notice to its victims (docs/design.md "Notice")."""

    plan = s.IntegerField()
    givenAt = s.DateTimeField()
    deadline = s.DateTimeField(help_text="the victims are evicted then at the latest")
    withdrawnAt = s.DateTimeField(allow_null=True, help_text="withdrawn then: nobody evicted; null: not")


def notice_json(plan) -> dict | None:
    """A plan's ``Notice``, None when its victims were given none."""
    if plan is None or plan.notice_given_at is None:
        return None
    return {
        "plan": plan.pk,
        "givenAt": plan.notice_given_at,
        "deadline": plan.notice_deadline,
        "withdrawnAt": plan.notice_withdrawn_at,
    }


class Cost(s.Serializer):
    pdbViolations = s.IntegerField()
    maxVictimPriority = s.IntegerField(allow_null=True)
    victimPrioritySum = s.IntegerField()
    victimUnits = s.IntegerField()
    evictedPods = s.IntegerField()
    evictedGpus = s.IntegerField()
    lostGpuSeconds = s.FloatField()


class Plan(s.ModelSerializer):
    """The ``gang plan`` JSON of a stored plan, plus where it came from and what it costs."""

    url = s.HyperlinkedIdentityField(view_name="api:v1:plan-detail")
    request = s.IntegerField(source="request_id", read_only=True)
    namespace = s.CharField(source="request.namespace", read_only=True)
    name = s.CharField(source="request.name", read_only=True)
    podGroup = s.CharField(source="request.podgroup", read_only=True)
    cost = s.SerializerMethodField()
    plannedBy = s.CharField(source="planned_by")
    planningSeconds = s.FloatField(source="planning_seconds")
    createdAt = s.DateTimeField(source="created_at")
    notice = s.SerializerMethodField(help_text="its victims' notice; null: none was given")

    class Meta:
        model = models.Plan
        fields = [
            "id",
            "url",
            "request",
            "namespace",
            "name",
            "source",
            # docs/design.md "gang plan", key for key
            "podGroup",
            "policy",
            "feasible",
            "victims",
            "evictions",
            "placement",
            "domain",
            "reason",
            "outcome",
            "optimality",
            "cost",
            "plannedBy",
            "planningSeconds",
            "createdAt",
            "notice",
        ]
        read_only_fields = fields

    def get_cost(self, plan) -> Cost:  # the annotation is the schema's
        return cost_json({field: getattr(plan, field) for field in COST_KEYS})

    @extend_schema_field(Notice(allow_null=True))
    def get_notice(self, plan) -> dict | None:
        return notice_json(plan)


class PlanDetail(Plan):
    podEvictions = Eviction(source="pod_evictions", many=True, read_only=True)

    class Meta(Plan.Meta):
        fields = Plan.Meta.fields + ["podEvictions"]
        read_only_fields = fields


class ActorSerializer(s.Serializer):
    """A typed identity (scheduler/preemption/actors.py): a local user and a Kubernetes user of one name
    are two people."""

    kind = s.ChoiceField(choices=sorted(actors.KINDS))
    name = s.CharField()
    display = s.CharField(help_text="the identity in words, e.g. 'Kubernetes user oper-b'")


class Request(s.ModelSerializer):
    url = s.HyperlinkedIdentityField(view_name="api:v1:request-detail")
    podGroup = s.CharField(source="podgroup", read_only=True)
    createdAt = s.DateTimeField(source="created_at")
    updatedAt = s.DateTimeField(source="updated_at")
    plannedAt = s.DateTimeField(source="planned_at")
    executionStartedAt = s.DateTimeField(source="execution_started_at")
    finishedAt = s.DateTimeField(source="finished_at", allow_null=True)
    approvalDeadline = s.DateTimeField(
        source="approval_deadline",
        read_only=True,
        allow_null=True,
        help_text="approve mode: the plan expires unapproved then; null: it waits for nobody",
    )
    decidedBy = s.SerializerMethodField(
        help_text="who approved, rejected or cancelled it, or gangweb (expired, settled); null: nobody"
    )
    decidedAt = s.DateTimeField(source="decided_at", read_only=True, allow_null=True)
    traceId = s.SerializerMethodField(
        help_text="its OpenTelemetry trace id (32 hex digits; docs/design.md, 'Traces'); null: not traced"
    )
    notice = s.SerializerMethodField(help_text="the notice its latest plan gave the victims; null: none")

    class Meta:
        model = models.PreemptionRequest
        fields = [
            "id",
            "url",
            "podGroup",
            "namespace",
            "name",
            "mode",
            "policy",
            "state",
            "reason",
            "trigger",
            "createdAt",
            "updatedAt",
            "plannedAt",
            "executionStartedAt",
            "finishedAt",
            "approvalDeadline",
            "decidedBy",
            "decidedAt",
            "traceId",
            "notice",
        ]
        read_only_fields = fields

    @extend_schema_field(Notice(allow_null=True))
    def get_notice(self, request) -> dict | None:
        if hasattr(request, "noticed_plan"):  # the list's query reads it beside each request
            if request.noticed_plan is None:
                return None
            return {
                "plan": request.noticed_plan,
                "givenAt": request.notice_given_at,
                "deadline": request.notice_deadline,
                "withdrawnAt": request.notice_withdrawn_at,
            }
        plans = [p for p in request.plans.all() if p.source == PlanSource.ENGINE]
        return notice_json(max(plans, key=lambda p: (p.created_at, p.pk)) if plans else None)

    @extend_schema_field(ActorSerializer(allow_null=True))
    def get_decidedBy(self, request) -> dict | None:
        decider = request.decider
        return decider.as_json() if decider else None

    def get_traceId(self, request) -> str | None:
        return request.trace_id or None


class DecisionPreemptor(s.Serializer):
    namespace = s.CharField()
    name = s.CharField()
    podGroup = s.CharField()
    priority = s.IntegerField(allow_null=True, help_text="its priority when planned; null: not known")
    priorityClass = s.CharField(allow_null=True)
    state = s.ChoiceField(PODGROUP_STATES, allow_null=True, help_text="now; null: gone or not readable")
    placedPods = s.IntegerField(allow_null=True)
    pods = s.IntegerField(allow_null=True)
    gpus = s.IntegerField(allow_null=True)


class DecisionRule(s.Serializer):
    policy = s.CharField()
    outcome = s.CharField(allow_null=True)
    optimality = s.CharField(allow_null=True)
    preemptorPriority = s.IntegerField(allow_null=True)
    highestVictimPriority = s.IntegerField(allow_null=True)
    lowerPriorityOnly = s.BooleanField(
        allow_null=True, help_text="every victim's priority is below the preemptor's; null: no victims"
    )
    pdbViolations = s.IntegerField()
    reason = s.CharField(allow_blank=True)


class DecisionVictim(s.Serializer):
    """A victim unit; one of a namespace the reader does not see keeps its numbers, not its names."""

    kind = s.CharField()
    namespace = s.CharField(allow_null=True)
    name = s.CharField(allow_null=True)
    otherNamespace = s.BooleanField(required=False)
    priority = s.IntegerField()
    priorityClass = s.CharField(allow_null=True, help_text="its tier")
    podCount = s.IntegerField()
    gpus = s.IntegerField()
    runningSeconds = s.FloatField(allow_null=True, help_text="how long it had run when planned")
    lostGpuSeconds = s.FloatField(allow_null=True, help_text="the work it loses")
    pdbViolations = s.IntegerField()
    evictedPods = s.IntegerField()
    evictions = s.DictField(child=s.IntegerField(), help_text="its pods per eviction state")


class DecisionAlternative(s.Serializer):
    domain = s.CharField(allow_null=True)
    topologyKey = s.CharField(allow_null=True)
    how = s.CharField()
    placedPods = s.IntegerField()
    victimUnits = s.IntegerField()
    evictedPods = s.IntegerField()
    highestVictimPriority = s.IntegerField(allow_null=True)
    pdbViolations = s.IntegerField()
    lostGpuSeconds = s.FloatField()


class DecisionTry(s.Serializer):
    plan = s.IntegerField()
    at = s.DateTimeField()
    source = s.CharField()
    policy = s.CharField()
    feasible = s.BooleanField()
    outcome = s.CharField(allow_null=True)
    reason = s.CharField(allow_blank=True)


class DecisionStep(s.Serializer):
    step = s.CharField(help_text="detected, planned, decided, evicting, evicted, placed, or the end state")
    at = s.DateTimeField()
    detail = s.CharField(allow_blank=True)


class CascadeLink(s.Serializer):
    request = s.IntegerField()
    namespace = s.CharField(allow_null=True)
    name = s.CharField(allow_null=True)
    otherNamespace = s.BooleanField(required=False)
    state = s.CharField()
    at = s.DateTimeField()
    evictedPods = s.IntegerField()


class Cascade(s.Serializer):
    withinSeconds = s.IntegerField()
    causedBy = CascadeLink(allow_null=True, help_text="the request that evicted this gang just before")
    caused = CascadeLink(many=True, help_text="requests of its victims that at once evicted others")


class DecisionEntry(s.Serializer):
    id = s.IntegerField()
    kind = s.CharField()
    plan = s.IntegerField(allow_null=True)
    namespace = s.CharField(allow_null=True)
    message = s.CharField()
    createdAt = s.DateTimeField()


class NativePodGroupFigures(s.Serializer):
    attempts = s.DictField(child=s.FloatField(), help_text="pod group preemption attempts by result")
    preemptions = s.FloatField(help_text="pod group preemptions that chose victims")
    victims = s.FloatField(help_text="victims they chose, summed")
    disruptions = s.FloatField(help_text="pod groups those victims disrupted")
    pdbViolations = s.FloatField()
    evaluations = s.FloatField()
    evaluationSecondsMean = s.FloatField(allow_null=True)


class NativePodFigures(s.Serializer):
    attempts = s.FloatField()
    victims = s.FloatField()


class NativeFigures(s.Serializer):
    """kube-scheduler's own preemption totals since it started (scheduler/nativemetrics.py)."""

    state = s.CharField(help_text="ok, unavailable, or missing (no GANGWEB_SCHEDULER_METRICS_URL)")
    detail = s.CharField(allow_blank=True)
    readAt = s.FloatField(allow_null=True, help_text="seconds since the epoch")
    podGroup = NativePodGroupFigures()
    pod = NativePodFigures()


class RequestDecision(s.Serializer):
    """A request as a decision (named apart from ``Decision``, an admission decision)."""

    preemptor = DecisionPreemptor()
    rule = DecisionRule()
    victims = DecisionVictim(many=True)
    alternatives = DecisionAlternative(many=True, help_text="the cheapest plans not chosen, one per domain")
    tried = DecisionTry(many=True)
    timeline = DecisionStep(many=True)
    cascade = Cascade()
    ledger = DecisionEntry(many=True)
    native = NativeFigures(
        allow_null=True,
        help_text="observe mode: kube-scheduler's preemption totals, read from its /metrics, beside the plans",
    )


class RequestDetail(Request):
    plans = PlanDetail(many=True, read_only=True)
    decision = s.SerializerMethodField(help_text="the request as a decision (docs/design.md 'Decision view')")

    class Meta(Request.Meta):
        fields = Request.Meta.fields + ["plans", "decision"]
        read_only_fields = fields

    @extend_schema_field(RequestDecision())
    def get_decision(self, request) -> dict:
        return decision(request, scope_of(self.context["request"]))


class LedgerEntrySerializer(s.ModelSerializer):
    namespace = s.CharField(read_only=True)
    name = s.CharField(read_only=True)
    podGroup = s.SerializerMethodField()
    createdAt = s.DateTimeField(source="created_at")

    class Meta:
        model = LedgerEntry
        fields = [
            "id",
            "kind",
            "request",
            "plan",
            "namespace",
            "name",
            "podGroup",
            "message",
            "data",
            "createdAt",
        ]
        read_only_fields = fields

    def get_podGroup(self, entry) -> str | None:
        return gang_key_of(entry.namespace, entry.name) if entry.namespace else None


SIMULATION_SOURCES = ("cluster", "snapshot")
PENDING_STAGES = ("planning", "next", "later", "never")

# --- cluster rows (dicts from queries/) ----------------------------------------------------------


class Allocation(s.Serializer):
    namespace = s.CharField(allow_null=True, help_text="null: in use, other namespace")
    name = s.CharField(allow_null=True, help_text="the gang (PodGroup, or a lone pod)")
    gpus = s.IntegerField()
    otherNamespace = s.BooleanField()


class Node(s.Serializer):
    name = s.CharField()
    labels = s.DictField(child=s.CharField())
    ready = s.BooleanField()
    cordoned = s.BooleanField()
    gpus = s.IntegerField()
    allocatedGpus = s.IntegerField()
    freeGpus = s.IntegerField()
    allocations = Allocation(many=True)


class Holder(s.Serializer):
    namespace = s.CharField(allow_null=True, help_text="null: in use, other namespace")
    name = s.CharField(allow_null=True, help_text="the gang (PodGroup, or a lone pod)")
    otherNamespace = s.BooleanField()


class NodeDevice(s.Serializer):
    index = s.IntegerField(help_text="the device's place on the node, as the GPU map draws it")
    name = s.CharField(allow_null=True, help_text="a DRA device's name in its ResourceSlice; null for a GPU")
    dra = s.BooleanField()
    mig = s.ListField(
        child=s.JSONField(), allow_null=True, help_text="[parent GPU index, MIG profile] of a MIG partition"
    )
    heldBy = Holder(allow_null=True, help_text="null: free")
    nominatedFor = Holder(allow_null=True, help_text="a waiting gang of yours nominated to this free device")


class NodePod(s.Serializer):
    namespace = s.CharField()
    name = s.CharField()
    podGroup = s.CharField(allow_null=True, help_text="null: a lone pod")
    phase = s.CharField()
    priorityClass = s.CharField(allow_null=True)
    priority = s.IntegerField()
    gpus = s.IntegerField()
    startedAt = s.CharField(allow_null=True)
    deleting = s.BooleanField()


class HiddenPods(s.Serializer):
    pods = s.IntegerField()
    gpus = s.IntegerField()


class SliceDevice(s.Serializer):
    name = s.CharField()
    attributes = s.DictField(child=s.JSONField())


class NodeSlice(s.Serializer):
    name = s.CharField()
    driver = s.CharField(allow_null=True)
    pool = s.CharField(allow_null=True)
    devices = SliceDevice(many=True)


class NodeCondition(s.Serializer):
    type = s.CharField()
    status = s.CharField()
    reason = s.CharField(required=False)
    message = s.CharField(required=False)
    lastTransitionTime = s.CharField(required=False)


class Taint(s.Serializer):
    key = s.CharField()
    value = s.CharField(required=False)
    effect = s.CharField()


class NodeDetail(s.Serializer):
    name = s.CharField()
    labels = s.DictField(child=s.CharField())
    taints = Taint(many=True)
    conditions = NodeCondition(many=True)
    ready = s.BooleanField()
    cordoned = s.BooleanField()
    domain = s.CharField(
        allow_null=True, help_text="the GPU map's group: its rack label, else its zone; null: not on the map"
    )
    mapIndex = s.IntegerField(
        allow_null=True,
        help_text="its index on the GPU map, as map/ and the live map.delta entries name it; null: not on the map",
    )
    zone = s.CharField(allow_null=True)
    allocatable = s.DictField(child=s.CharField())
    pods = NodePod(many=True, help_text="the unfinished pods on the node, of namespaces you see")
    otherNamespaces = HiddenPods(help_text="the pods of namespaces you do not see, only counted")
    devices = NodeDevice(many=True, help_text="its squares on the GPU map: GPUs, then DRA devices")
    resourceSlices = NodeSlice(many=True)


class Verdict(s.Serializer):
    request = s.IntegerField()
    state = s.CharField()
    mode = s.CharField()
    outcome = s.CharField(allow_null=True, help_text="fits, preempt or infeasible:<why> (docs/engine.md)")
    reason = s.CharField(allow_blank=True)
    at = s.DateTimeField()
    retryAt = s.DateTimeField(allow_null=True, help_text="when gangweb may open its next request")
    notice = Notice(allow_null=True, help_text="the notice its latest plan gave the victims; null: none")


class GangQueue(s.Serializer):
    system = s.ChoiceField(SYSTEMS)
    name = s.CharField()


class Blocker(s.Serializer):
    code = s.ChoiceField(tuple(BLOCKER_CODES))
    reason = s.CharField(help_text="one sentence with numbers")
    numbers = s.DictField(help_text="the figures the sentence names")


class Broken(s.Serializer):
    state = s.CharField()
    minCount = s.IntegerField()
    running = s.IntegerField(help_text="members that run (bound, on a Ready node, not crash-looping)")
    heldGpus = s.IntegerField(help_text="GPUs its bound members hold")
    causes = s.ListField(child=s.CharField(), help_text="member-failed, member-lost, crash-looping, ...")
    restarting = s.BooleanField(help_text="a member waits to be bound again")
    composite = s.CharField(
        allow_blank=True,
        help_text="the highest CompositePodGroup above, short of its minGroupCount ('' if none)",
    )


class PodGroup(s.Serializer):
    namespace = s.CharField()
    name = s.CharField()
    podGroup = s.CharField()
    state = s.ChoiceField(PODGROUP_STATES)
    priority = s.IntegerField()
    priorityClass = s.CharField(allow_null=True)
    disruptionMode = s.CharField()
    preemptionPolicy = s.CharField()
    minCount = s.IntegerField()
    pods = s.IntegerField()
    placedPods = s.IntegerField()
    pendingPods = s.IntegerField()
    gpus = s.IntegerField()
    placedGpus = s.IntegerField()
    topologyKey = s.CharField(allow_null=True)
    createdAt = s.CharField(allow_null=True)
    waitingSeconds = s.IntegerField()
    reason = s.CharField(help_text="the dominant reason, in plain words")
    broken = Broken(allow_null=True, help_text="how the gang is broken (docs/idle.md); null: it is not")
    noticeDeadline = s.CharField(
        allow_null=True,
        help_text="gangweb gave this gang notice: it is preempted then at the latest (its "
        "gangweb.io/preemption-deadline annotation); null: no notice",
    )
    queue = GangQueue(
        allow_null=True, help_text="the queue manager's queue it runs or waits in (docs/queues.md)"
    )
    blocker = Blocker(
        allow_null=True,
        help_text="why it waits (docs/queues.md); null: it does not wait, or nothing known blocks it",
    )
    verdict = Verdict(allow_null=True)


class Member(s.Serializer):
    namespace = s.CharField()
    name = s.CharField()
    node = s.CharField(allow_null=True)
    phase = s.CharField()
    gpus = s.IntegerField()
    deleting = s.BooleanField()


class Condition(s.Serializer):
    type = s.CharField()
    status = s.CharField()
    reason = s.CharField(required=False)
    message = s.CharField(required=False)
    lastTransitionTime = s.CharField(required=False)


class Decision(s.Serializer):
    uid = s.CharField(allow_null=True)
    webhook = s.CharField(allow_null=True)
    kind = s.CharField(allow_null=True)
    namespace = s.CharField()
    name = s.CharField()
    operation = s.CharField(allow_null=True)
    dryRun = s.BooleanField()
    allowed = s.BooleanField()
    message = s.CharField(allow_blank=True)
    warnings = s.ListField(child=s.CharField())
    podGroup = s.CharField(allow_null=True)
    source = s.CharField(allow_null=True)
    minCount = s.IntegerField(allow_null=True)
    mode = s.CharField(allow_null=True)
    at = s.CharField(allow_null=True, help_text="when gangweb kept it (ISO 8601)")


class PodGroupDetail(PodGroup):
    members = Member(many=True)
    conditions = Condition(many=True)
    decisions = Decision(many=True)
    asPreemptor = Request(many=True)
    asVictim = Eviction(many=True)


class Pending(s.Serializer):
    position = s.IntegerField(allow_null=True, help_text="1 is served first; null: never served by gangweb")
    stage = s.ChoiceField(PENDING_STAGES)
    namespace = s.CharField()
    name = s.CharField()
    priority = s.IntegerField()
    priorityClass = s.CharField(allow_null=True)
    minCount = s.IntegerField()
    pendingPods = s.IntegerField()
    gpus = s.IntegerField()
    waitingSeconds = s.IntegerField()
    request = s.IntegerField(allow_null=True)
    servedAt = s.CharField(allow_null=True)
    reason = s.CharField()


class UsageRow(s.Serializer):
    namespace = s.CharField(allow_null=True, help_text="null: every namespace you do not see, added up")
    priorityClass = s.CharField()
    priority = s.IntegerField()
    gpus = s.IntegerField()
    waitingGpus = s.IntegerField()
    otherNamespace = s.BooleanField()


class UsageSample(s.Serializer):
    at = s.CharField()
    rows = UsageRow(many=True)


class Usage(s.Serializer):
    at = s.CharField()
    totalGpus = s.IntegerField()
    allocatedGpus = s.IntegerField()
    rows = UsageRow(many=True)
    history = UsageSample(many=True)


class Problem(s.Serializer):
    """RFC 9457 problem details."""

    type = s.CharField()
    title = s.CharField()
    status = s.IntegerField()
    detail = s.CharField()
    instance = s.CharField(allow_blank=True)
    errors = s.DictField(child=s.ListField(child=s.CharField()), required=False)


# --- simulate ------------------------------------------------------------------------------------


# What ``podgroup_key`` accepts once the field is trimmed (and CharField refuses NUL).
PODGROUP_PATTERN = rf"^[^/{SPACE}\x00][^/\x00]*/[^/\x00]*[^/{SPACE}\x00]$"
PODGROUP_MAX = 507  # a namespace (63) and a name (253) with room to spare; longer is a 400


def podgroup_key(value: str) -> GangKey:
    """``value`` if it is NAMESPACE/NAME of a PodGroup, else a ValidationError (a body's ``podGroup``)."""
    try:
        return parse_gang_key(value)
    except ValueError:
        raise s.ValidationError(f"{value!r} is not NAMESPACE/NAME of a PodGroup") from None


@extend_schema_field({"type": "string", "pattern": PODGROUP_PATTERN, "maxLength": PODGROUP_MAX})
class PodGroupKeyField(s.CharField):
    """NAMESPACE/NAME of a PodGroup (the schema states the pattern the validation enforces)."""

    def __init__(self, **kwargs):
        super().__init__(max_length=PODGROUP_MAX, **kwargs)


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "enum": sorted(POLICIES)},
        "minItems": 1,
        "maxItems": len(POLICIES),
        "uniqueItems": True,
        "default": [DEFAULT_POLICY],
    }
)
class PoliciesField(s.ListField):
    """One or more policies, each once."""


@extend_schema_field(
    {
        "description": "a snapshot in the docs/design.md contract (a List of objects, or a list of objects); "
        "absent: the live cluster. Each object is read as the engine reads a snapshot file: one it cannot read "
        "is a 400 naming it",
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["List"]},
                    "items": {"type": "array", "items": {"type": "object"}},
                },
                "required": ["kind", "items"],
            },
            {"type": "array", "items": {"type": "object"}},
        ],
    }
)
class SnapshotField(s.JSONField):
    """An inline snapshot."""


class SimulateBody(s.Serializer):
    """``POST /api/v1/simulate``: a gang, one or more policies, and the live cluster or a snapshot."""

    podGroup = PodGroupKeyField(help_text="NAMESPACE/NAME of the PodGroup to place")
    policies = PoliciesField(
        child=s.ChoiceField(sorted(POLICIES)),
        min_length=1,
        max_length=len(POLICIES),
        default=[DEFAULT_POLICY],
    )
    snapshot = SnapshotField(required=False)

    def validate_podGroup(self, value: str) -> str:
        return podgroup_key(value)

    def validate_policies(self, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise s.ValidationError("each policy once")
        return value


class SimulatedPlan(s.Serializer):
    podGroup = s.CharField()
    policy = s.CharField()
    feasible = s.BooleanField()
    victims = s.ListField(child=s.DictField())
    evictions = s.ListField(child=s.CharField(allow_null=True))
    placement = s.DictField(child=s.CharField())
    domain = s.CharField(allow_null=True)
    reason = s.CharField()
    outcome = s.CharField()
    optimality = s.CharField(
        allow_null=True, help_text="proven, or heuristic:<why>; null for an infeasible plan (docs/design.md)"
    )
    cost = Cost()
    planningSeconds = s.FloatField()


class Simulation(s.Serializer):
    podGroup = s.CharField()
    namespace = s.CharField()
    name = s.CharField()
    source = s.ChoiceField(SIMULATION_SOURCES)
    plans = SimulatedPlan(many=True)


# --- the idle figure (docs/idle.md) --------------------------------------------------------------


class IdleCauses(s.Serializer):
    freeWhileWaiting = s.FloatField(help_text="free GPUs while a gang waits (fragmentation)")
    brokenGangs = s.FloatField(help_text="GPUs held by broken gangs")
    allocatedIdle = s.FloatField(help_text="allocated GPUs that did no work over the window")
    heldForUnplaced = s.FloatField(
        help_text="GPUs held for a gang not placed yet (nominated, reserved by gangweb, or bound short of minCount)"
    )


class IdleSpan(s.Serializer):
    namespace = s.CharField()
    name = s.CharField(required=False)
    lastHour = IdleCauses()
    lastDay = IdleCauses()


class IdleQueue(s.Serializer):
    system = s.ChoiceField(("kueue", "volcano", "kai", "yunikorn"))
    queue = s.CharField(help_text="the queue's name in its system (Kueue: the ClusterQueue)")
    lastHour = IdleCauses()
    lastDay = IdleCauses()


class BrokenNow(s.Serializer):
    namespace = s.CharField()
    name = s.CharField()
    podGroup = s.CharField()
    heldGpus = s.IntegerField()
    minCount = s.IntegerField()
    running = s.IntegerField()
    causes = s.ListField(child=s.CharField())
    since = s.DateTimeField()
    brokenSeconds = s.IntegerField()
    reapedBy = s.IntegerField(allow_null=True, help_text="the reap request, when the reaper opened one")


class ActivitySource(s.Serializer):
    state = s.ChoiceField(("ok", "partial", "unavailable", "missing", "unsampled"))
    detail = s.CharField(allow_blank=True)
    at = s.DateTimeField(allow_null=True)
    unknownGpus = s.IntegerField(
        help_text="GPUs whose activity names no pod or claim gangweb knows: never idle"
    )


class IdlePoint(IdleCauses):
    at = s.DateTimeField(help_text="the hour's start")


class IdleGpuHours(s.Serializer):
    days = s.IntegerField()
    total = IdleCauses(help_text="GPU-hours over the range")
    points = IdlePoint(
        many=True, help_text="GPU-hours per hour, oldest first; hours without an idle sample left out"
    )


class IdleFigure(s.Serializer):
    lastHour = IdleCauses(help_text="GPU-hours")
    lastDay = IdleCauses(help_text="GPU-hours")
    now = IdleCauses(help_text="GPUs idle at the last sample")
    byNamespace = IdleSpan(many=True)
    byGang = IdleSpan(many=True, help_text="the 100 gangs with the most idle GPU-hours over the day")
    byQueue = IdleQueue(
        many=True, help_text="per queue of a queue manager: the idle GPU-hours of its gangs you see"
    )
    broken = BrokenNow(many=True)
    activity = ActivitySource()
