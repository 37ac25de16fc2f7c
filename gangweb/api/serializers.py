"""JSON shapes of the ledger for platform teams.

Keys are camelCase like the ``gang plan`` contract (docs/design.md) and the live events, so a plan reads
the same whether it comes from the CLI, the API or the websocket.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from scheduler.engine import DEFAULT_POLICY, POLICIES
from scheduler.preemption.models import Eviction, LedgerEntry, Plan, PreemptionRequest
from scheduler.preemption.planning import COST_KEYS as COST_FIELDS
from scheduler.preemption.planning import cost_json

__all__ = ["COST_FIELDS", "cost_json"]


class EvictionSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:eviction-detail")
    request = serializers.IntegerField(source="plan.request_id", read_only=True)
    plan = serializers.IntegerField(source="plan_id", read_only=True)
    pod = serializers.CharField(read_only=True)
    podUid = serializers.CharField(source="pod_uid")
    victimUnit = serializers.CharField(source="victim_unit")
    dryRunCode = serializers.IntegerField(source="dry_run_code", allow_null=True)
    dryRunMessage = serializers.CharField(source="dry_run_message")
    apiCode = serializers.IntegerField(source="api_code", allow_null=True)
    apiMessage = serializers.CharField(source="api_message")
    createdAt = serializers.DateTimeField(source="created_at")
    dryRunAt = serializers.DateTimeField(source="dry_run_at", allow_null=True)
    requestedAt = serializers.DateTimeField(source="requested_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)

    class Meta:
        model = Eviction
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
        ]
        read_only_fields = fields


class PlanSerializer(serializers.ModelSerializer):
    """The ``gang plan`` JSON of a stored plan, plus where it came from and what it costs."""

    url = serializers.HyperlinkedIdentityField(view_name="api:plan-detail")
    request = serializers.IntegerField(source="request_id", read_only=True)
    podGroup = serializers.CharField(source="request.podgroup", read_only=True)
    cost = serializers.SerializerMethodField()
    plannedBy = serializers.CharField(source="planned_by")
    planningSeconds = serializers.FloatField(source="planning_seconds")
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = Plan
        fields = [
            "id",
            "url",
            "request",
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
        ]
        read_only_fields = fields

    def get_cost(self, plan: Plan) -> dict[str, Any]:
        return cost_json({field: getattr(plan, field) for field in COST_FIELDS})


class PlanDetailSerializer(PlanSerializer):
    """A plan with one row per victim pod (``evictions`` stays the contract's sorted pod list)."""

    podEvictions = EvictionSerializer(source="pod_evictions", many=True, read_only=True)

    class Meta(PlanSerializer.Meta):
        fields = PlanSerializer.Meta.fields + ["podEvictions"]
        read_only_fields = fields


class RequestSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:request-detail")
    podGroup = serializers.CharField(source="podgroup", read_only=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    plannedAt = serializers.DateTimeField(source="planned_at")
    executionStartedAt = serializers.DateTimeField(source="execution_started_at")
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)

    class Meta:
        model = PreemptionRequest
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
        ]
        read_only_fields = fields


class RequestDetailSerializer(RequestSerializer):
    plans = PlanDetailSerializer(many=True, read_only=True)

    class Meta(RequestSerializer.Meta):
        fields = RequestSerializer.Meta.fields + ["plans"]
        read_only_fields = fields


class LedgerEntrySerializer(serializers.ModelSerializer):
    podGroup = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = LedgerEntry
        fields = ["id", "kind", "request", "plan", "podGroup", "message", "data", "createdAt"]
        read_only_fields = fields

    def get_podGroup(self, entry: LedgerEntry) -> str | None:
        return f"{entry.namespace}/{entry.name}" if entry.namespace else None


class WhatIfSerializer(serializers.Serializer):
    """The body of ``POST /api/plan/``."""

    podGroup = serializers.CharField(max_length=507, trim_whitespace=True)
    policy = serializers.CharField(required=False, default=DEFAULT_POLICY)

    def validate_podGroup(self, value: str) -> str:
        namespace, slash, name = value.partition("/")
        if not (slash and namespace and name) or "/" in name:
            raise serializers.ValidationError(f"{value!r} is not NAMESPACE/NAME of a PodGroup")
        return value

    def validate_policy(self, value: str) -> str:
        if value not in POLICIES:
            raise serializers.ValidationError(
                f"unknown policy {value!r}; choose one of: {', '.join(sorted(POLICIES))}"
            )
        return value
