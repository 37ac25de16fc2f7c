"""The preemption ledger: requests, plans, evictions and an append-only history.

State changes go through ``scheduler.preemption.ledger`` only (row locks, history entry, event on commit); the
models here hold data and the legal transitions, nothing else.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from scheduler.preemption import actors
from scheduler.preemption.actors import Actor


class RequestState(models.TextChoices):
    PENDING = "pending", "pending"
    PLANNING = "planning", "planning"
    PLANNED = "planned", "planned"
    EXECUTING = "executing", "executing"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"
    INFEASIBLE = "infeasible", "infeasible"
    SUPERSEDED = "superseded", "superseded"
    # observe mode: gangweb's plan is recorded beside kube-scheduler's actions, never executed.
    OBSERVED = "observed", "observed"
    # approve mode: the plan waits for an operator (scheduler/preemption/actions.py).
    AWAITING_APPROVAL = "awaiting_approval", "awaiting approval"
    REJECTED = "rejected", "rejected"
    EXPIRED = "expired", "expired"
    CANCELLED = "cancelled", "cancelled"


ACTIVE_REQUEST_STATES = (
    RequestState.PENDING,
    RequestState.PLANNING,
    RequestState.PLANNED,
    RequestState.AWAITING_APPROVAL,
    RequestState.EXECUTING,
)

# approve mode: a request in these states waits for a person (the dashboard's header, the approvals gauge).
AWAITING_APPROVAL_STATES = (RequestState.PLANNED, RequestState.AWAITING_APPROVAL)

REQUEST_TRANSITIONS: dict[str, frozenset[str]] = {
    # pending -> observed: observe mode, kube-scheduler's victims deleted before gangweb read them (no plan).
    RequestState.PENDING: frozenset(
        {
            RequestState.PLANNING,
            RequestState.FAILED,
            RequestState.SUPERSEDED,
            RequestState.CANCELLED,
            RequestState.OBSERVED,
        }
    ),
    # planning -> pending: a planning worker died and the request goes back to the queue.
    RequestState.PLANNING: frozenset(
        {
            RequestState.PLANNED,
            RequestState.INFEASIBLE,
            RequestState.FAILED,
            RequestState.SUPERSEDED,
            RequestState.PENDING,
            RequestState.CANCELLED,
        }
    ),
    # planned -> infeasible: the plan breaks a disruption budget and GANGWEB_PDB_POLICY=respect.
    RequestState.PLANNED: frozenset(
        {
            RequestState.EXECUTING,
            RequestState.OBSERVED,
            RequestState.FAILED,
            RequestState.INFEASIBLE,
            RequestState.SUPERSEDED,
            RequestState.AWAITING_APPROVAL,
            RequestState.CANCELLED,
        }
    ),
    # awaiting_approval -> planned: approved (re-checked first), then executed as in enforce mode;
    # -> superseded: the re-check at approval found the plan stale (a new request re-plans the gang).
    RequestState.AWAITING_APPROVAL: frozenset(
        {
            RequestState.PLANNED,
            RequestState.REJECTED,
            RequestState.EXPIRED,
            RequestState.CANCELLED,
            RequestState.SUPERSEDED,
            RequestState.FAILED,
        }
    ),
    RequestState.EXECUTING: frozenset(
        {RequestState.SUCCEEDED, RequestState.FAILED, RequestState.INFEASIBLE, RequestState.SUPERSEDED}
    ),
    RequestState.SUCCEEDED: frozenset(),
    RequestState.FAILED: frozenset(),
    RequestState.INFEASIBLE: frozenset(),
    RequestState.SUPERSEDED: frozenset(),
    RequestState.OBSERVED: frozenset(),
    RequestState.REJECTED: frozenset(),
    RequestState.EXPIRED: frozenset(),
    RequestState.CANCELLED: frozenset(),
}


class Mode(models.TextChoices):
    ENFORCE = "enforce", "enforce"
    OBSERVE = "observe", "observe"
    APPROVE = "approve", "approve"


class PreemptionRequest(models.Model):
    """One gang that stayed unschedulable, and what became of it."""

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.ENFORCE)
    policy = models.CharField(max_length=32, default="gangweb")
    state = models.CharField(max_length=24, choices=RequestState.choices, default=RequestState.PENDING)
    reason = models.TextField(blank=True, default="")
    # Why the request was opened ("PodGroupInitiallyScheduled=False", "pending for 45s", ...).
    trigger = models.CharField(max_length=200, blank=True, default="")
    # Its OpenTelemetry trace (scheduler/tracing.py): the trace id and its root span's id, hex; "" untraced.
    trace_id = models.CharField(max_length=32, blank=True, default="")
    trace_span = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    planned_at = models.DateTimeField(null=True, blank=True)
    execution_started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # approve mode: when an unapproved plan expires, and who approved, rejected or cancelled it, when.
    # Who is a typed identity (scheduler/preemption/actors.py): its kind, and its name in that kind.
    approval_deadline = models.DateTimeField(null=True, blank=True)
    decided_by_kind = models.CharField(max_length=16, blank=True, default="")
    decided_by = models.CharField(max_length=253, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "name"],
                condition=Q(state__in=[s.value for s in ACTIVE_REQUEST_STATES]),
                name="one_active_request_per_gang",
            )
        ]
        indexes = [models.Index(fields=["state", "updated_at"]), models.Index(fields=["namespace", "name"])]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} ({self.state})"

    @property
    def podgroup(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_REQUEST_STATES

    @property
    def decider(self) -> Actor | None:
        """Who approved, rejected or cancelled the request (or gangweb, which expired or settled it)."""
        return actors.stored(self.decided_by_kind, self.decided_by)

    def check_transition(self, new_state: str) -> None:
        if new_state not in REQUEST_TRANSITIONS[self.state]:
            raise ValidationError(f"request {self.pk}: cannot go from {self.state} to {new_state}")


class PlanSource(models.TextChoices):
    ENGINE = "engine", "gangweb engine"
    # observe mode: the victims kube-scheduler actually chose, for comparison.
    KUBE_SCHEDULER = "kube-scheduler", "kube-scheduler (observed)"


class Plan(models.Model):
    """A plan as ``gang plan`` prints it, plus its cost, frozen when it was computed."""

    request = models.ForeignKey(PreemptionRequest, on_delete=models.CASCADE, related_name="plans")
    source = models.CharField(max_length=20, choices=PlanSource.choices, default=PlanSource.ENGINE)
    policy = models.CharField(max_length=32)
    feasible = models.BooleanField(default=False)
    victims = models.JSONField(default=list)
    evictions = models.JSONField(default=list)
    placement = models.JSONField(default=dict)
    domain = models.CharField(max_length=253, null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    # The engine's machine-readable outcome: fits, preempt, infeasible:<why> (docs/engine.md).
    outcome = models.CharField(max_length=64, blank=True, default="")
    # proven, or heuristic:<why> (docs/design.md "gang plan"); null for infeasible and observed plans.
    optimality = models.CharField(max_length=32, null=True, blank=True)
    # Cost in docs/design.md order: PDB violations, highest victim priority, priority sum, units, pods, GPU-s.
    pdb_violations = models.IntegerField(default=0)
    max_victim_priority = models.IntegerField(null=True, blank=True)
    victim_priority_sum = models.BigIntegerField(default=0)
    victim_units = models.IntegerField(default=0)
    evicted_pods = models.IntegerField(default=0)
    evicted_gpus = models.IntegerField(default=0)
    lost_gpu_seconds = models.FloatField(default=0.0)
    planning_seconds = models.FloatField(default=0.0)
    # "single" (one task); "fan-out:N" on plans made before the fan-out was removed (2026-12, docs/pipeline.md).
    planned_by = models.CharField(max_length=40, blank=True, default="")
    # The watch cache's resourceVersion per plural the plan was made at (docs/design.md); {} = a fresh list.
    resource_versions = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Preempt with notice (docs/design.md "Notice"): when the victims were told, until when they may save,
    # and when the notice was withdrawn (the gang no longer needed the room); all null without a notice.
    notice_given_at = models.DateTimeField(null=True, blank=True)
    notice_deadline = models.DateTimeField(null=True, blank=True)
    notice_withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"plan {self.pk} for {self.request.podgroup} ({'feasible' if self.feasible else 'infeasible'})"

    def as_gang_plan(self) -> dict:
        """The docs/design.md ``gang plan`` JSON of this plan."""
        plan = {
            "podGroup": self.request.podgroup,
            "policy": self.policy,
            "feasible": self.feasible,
            "victims": self.victims,
            "evictions": self.evictions,
            "placement": self.placement,
            "domain": self.domain,
            "reason": self.reason,
        }
        if self.outcome:  # engine plans; kube-scheduler's observed victims have none
            plan["outcome"] = self.outcome
            plan["optimality"] = self.optimality
        if self.resource_versions:
            plan["resourceVersion"] = self.resource_versions.get("pods", "")
            plan["resourceVersions"] = self.resource_versions
        return plan


class EvictionState(models.TextChoices):
    PLANNED = "planned", "planned"
    DRY_RUN_OK = "dry_run_ok", "dry run ok"
    DRY_RUN_REFUSED = "dry_run_refused", "dry run refused"
    EVICTING = "evicting", "evicting"
    EVICTED = "evicted", "evicted"
    FAILED = "failed", "failed"


EVICTION_TRANSITIONS: dict[str, frozenset[str]] = {
    EvictionState.PLANNED: frozenset(
        {EvictionState.DRY_RUN_OK, EvictionState.DRY_RUN_REFUSED, EvictionState.FAILED, EvictionState.EVICTED}
    ),
    # dry_run_ok -> dry_run_ok|dry_run_refused: dry-run again when resuming before any real eviction.
    EvictionState.DRY_RUN_OK: frozenset(
        {
            EvictionState.DRY_RUN_OK,
            EvictionState.DRY_RUN_REFUSED,
            EvictionState.EVICTING,
            EvictionState.FAILED,
        }
    ),
    EvictionState.DRY_RUN_REFUSED: frozenset(),
    # evicting -> evicting: one more attempt (429/5xx) while finishing a unit.
    EvictionState.EVICTING: frozenset({EvictionState.EVICTING, EvictionState.EVICTED, EvictionState.FAILED}),
    EvictionState.EVICTED: frozenset(),
    EvictionState.FAILED: frozenset(),
}


class Eviction(models.Model):
    """One victim pod of one plan. Written ``evicting`` and committed before the API call."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="pod_evictions")
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    # The pod's UID when planned: a pod re-created under the same name is not this victim.
    pod_uid = models.CharField(max_length=64, blank=True, default="")
    node = models.CharField(max_length=253, blank=True, default="")
    gpus = models.IntegerField(default=0)
    victim_unit = models.CharField(max_length=520, help_text="Kind namespace/name of the victim unit")
    state = models.CharField(max_length=20, choices=EvictionState.choices, default=EvictionState.PLANNED)
    attempts = models.IntegerField(default=0)
    dry_run_code = models.IntegerField(null=True, blank=True)
    dry_run_message = models.TextField(blank=True, default="")
    api_code = models.IntegerField(null=True, blank=True)
    api_message = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    dry_run_at = models.DateTimeField(null=True, blank=True)
    requested_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Lost work (docs/design.md "Lost work"): the plan's estimate for this pod, GPU-seconds since
    # max(start, last checkpoint) as last read (``work_since``), and what was really lost once evicted:
    # gpus x (finished_at - work_since).
    estimated_lost_gpu_seconds = models.FloatField(null=True, blank=True)
    work_since = models.DateTimeField(null=True, blank=True)
    lost_gpu_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["plan_id", "victim_unit", "namespace", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "namespace", "name"], name="one_eviction_per_pod_per_plan"
            )
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} ({self.state})"

    @property
    def pod(self) -> str:
        return f"{self.namespace}/{self.name}"

    def check_transition(self, new_state: str) -> None:
        if new_state not in EVICTION_TRANSITIONS[self.state]:
            raise ValidationError(f"eviction {self.pod}: cannot go from {self.state} to {new_state}")


class LedgerEntry(models.Model):
    """Append-only history of everything the pipeline did, read by the dashboard and the API."""

    kind = models.CharField(max_length=40, db_index=True)
    request = models.ForeignKey(
        PreemptionRequest, null=True, blank=True, on_delete=models.CASCADE, related_name="history"
    )
    plan = models.ForeignKey(Plan, null=True, blank=True, on_delete=models.CASCADE, related_name="history")
    namespace = models.CharField(max_length=253, blank=True, default="")
    name = models.CharField(max_length=253, blank=True, default="")
    message = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.kind}: {self.message}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not self._state.adding:
            raise ValidationError("ledger entries are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("ledger entries are append-only")


class BrokenGang(models.Model):
    """One time a gang was broken (docs/idle.md): from ``gang.broken`` until ``gang.recovered``.

    ``revision`` is the newest resourceVersion the last judgment was made from: every process watches and
    judges, and a process whose cache lags never undoes what a fresher one recorded."""

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    held_gpus = models.IntegerField(default=0)
    min_count = models.IntegerField(default=0)
    running = models.IntegerField(default=0)
    causes = models.JSONField(default=list)
    revision = models.BigIntegerField(default=0)
    since = models.DateTimeField()
    recovered_at = models.DateTimeField(null=True, blank=True)
    # The reaper's request that ended it (scheduler/preemption/reaper.py), when one did.
    reaped_by = models.ForeignKey(
        PreemptionRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="reaped"
    )

    class Meta:
        ordering = ["-since", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "name"],
                condition=Q(recovered_at__isnull=True),
                name="one_open_broken_episode_per_gang",
            )
        ]
        indexes = [models.Index(fields=["namespace", "name", "-revision"]), models.Index(fields=["since"])]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} broken since {self.since:%Y-%m-%d %H:%M:%S}"

    @property
    def podgroup(self) -> str:
        return f"{self.namespace}/{self.name}"
