"""Read-mostly admin views of the ledger: history is evidence, so it cannot be edited here."""

from django.contrib import admin

from scheduler.models import Eviction, LedgerEntry, Plan, PreemptionRequest


class PlanInline(admin.TabularInline):
    model = Plan
    extra = 0
    can_delete = False
    fields = ("source", "policy", "feasible", "domain", "victim_units", "evicted_pods", "evicted_gpus", "reason")
    readonly_fields = fields
    show_change_link = True


class EvictionInline(admin.TabularInline):
    model = Eviction
    extra = 0
    can_delete = False
    fields = ("namespace", "name", "node", "victim_unit", "state", "attempts", "api_code", "api_message")
    readonly_fields = fields


@admin.register(PreemptionRequest)
class PreemptionRequestAdmin(admin.ModelAdmin):
    list_display = ("id", "namespace", "name", "mode", "state", "created_at", "finished_at", "reason")
    list_filter = ("state", "mode", "namespace")
    search_fields = ("namespace", "name", "reason")
    readonly_fields = ("created_at", "updated_at", "planned_at", "execution_started_at", "finished_at")
    inlines = [PlanInline]


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ("id", "request", "source", "policy", "feasible", "victim_units", "evicted_pods",
                    "evicted_gpus", "lost_gpu_seconds", "planning_seconds", "created_at")
    list_filter = ("source", "policy", "feasible")
    inlines = [EvictionInline]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Eviction)
class EvictionAdmin(admin.ModelAdmin):
    list_display = ("id", "plan", "namespace", "name", "node", "victim_unit", "state", "attempts", "api_code")
    list_filter = ("state",)
    search_fields = ("namespace", "name", "victim_unit")

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "kind", "namespace", "name", "message")
    list_filter = ("kind",)
    search_fields = ("message", "namespace", "name")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
