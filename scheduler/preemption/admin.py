"""View-only admin pages of the ledger: its rows are evidence of what gangweb did, so nobody edits them here.

Every state change goes through ``scheduler.preemption.ledger`` (row locks, a history entry, a live event). An
edit in the admin would bypass all three: a failed request set back to ``planned`` without history
is one ``recover_requests`` would then execute. So every model of ``scheduler.preemption.models`` is registered
view-only for everyone, superusers included: no add, change or delete permission, in the inlines
too, and no bulk actions (Django's only built-in one deletes).
"""

from django.contrib import admin

from scheduler.preemption.models import BrokenGang, Eviction, LedgerEntry, Plan, PreemptionRequest


class ViewOnly:
    """Refuses add, change and delete to every user; Django then renders the pages read-only."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ViewOnlyAdmin(ViewOnly, admin.ModelAdmin):
    actions = None

    def get_actions(self, request):
        return {}


class ViewOnlyInline(ViewOnly, admin.TabularInline):
    extra = 0
    max_num = 0
    can_delete = False


class PlanInline(ViewOnlyInline):
    model = Plan
    fields = (
        "source",
        "policy",
        "feasible",
        "domain",
        "victim_units",
        "evicted_pods",
        "evicted_gpus",
        "reason",
    )
    readonly_fields = fields
    show_change_link = True


class EvictionInline(ViewOnlyInline):
    model = Eviction
    fields = ("namespace", "name", "node", "victim_unit", "state", "attempts", "api_code", "api_message")
    readonly_fields = fields


@admin.register(PreemptionRequest)
class PreemptionRequestAdmin(ViewOnlyAdmin):
    list_display = ("id", "namespace", "name", "mode", "state", "created_at", "finished_at", "reason")
    list_filter = ("state", "mode", "namespace")
    search_fields = ("namespace", "name", "reason")
    inlines = [PlanInline]


@admin.register(Plan)
class PlanAdmin(ViewOnlyAdmin):
    list_display = (
        "id",
        "request",
        "source",
        "policy",
        "feasible",
        "victim_units",
        "evicted_pods",
        "evicted_gpus",
        "lost_gpu_seconds",
        "planning_seconds",
        "created_at",
    )
    list_filter = ("source", "policy", "feasible")
    inlines = [EvictionInline]


@admin.register(Eviction)
class EvictionAdmin(ViewOnlyAdmin):
    list_display = ("id", "plan", "namespace", "name", "node", "victim_unit", "state", "attempts", "api_code")
    list_filter = ("state",)
    search_fields = ("namespace", "name", "victim_unit")


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ViewOnlyAdmin):
    list_display = ("created_at", "kind", "namespace", "name", "message")
    list_filter = ("kind",)
    search_fields = ("message", "namespace", "name")


@admin.register(BrokenGang)
class BrokenGangAdmin(ViewOnlyAdmin):
    list_display = ("id", "namespace", "name", "held_gpus", "min_count", "running", "since", "recovered_at")
    list_filter = ("namespace",)
    search_fields = ("namespace", "name")
