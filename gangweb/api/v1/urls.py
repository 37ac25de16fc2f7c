"""``/api/v1/`` (docs/design.md "API v1"). Every route here is covered by the tenant-isolation test
generated from this list (tests/gangweb/api/v1/test_isolation.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from gangweb.api.v1.views import (
    actions,
    cluster,
    grouped,
    idle,
    ledger,
    notify,
    pages,
    queues,
    root,
    simulate,
)

app_name = "v1"

router = SimpleRouter()
router.register("requests", ledger.RequestViewSet, basename="request")
router.register("plans", ledger.PlanViewSet, basename="plan")
router.register("evictions", ledger.EvictionViewSet, basename="eviction")
router.register("ledger", ledger.LedgerEntryViewSet, basename="ledger")

urlpatterns = [
    path("", root.Root.as_view(), name="root"),
    path("nodes/", cluster.Nodes.as_view(), name="nodes"),
    path("nodes/<str:name>/", cluster.NodeDetail.as_view(), name="node-detail"),
    # the GPU map is the largest answer a page waits for (1 MB at 5,000 nodes): its view gzips when asked
    path("map/", pages.Map.as_view(), name="map"),
    path("overview/", pages.Overview.as_view(), name="overview"),
    path("podgroups/", cluster.PodGroups.as_view(), name="podgroups"),
    path("podgroups/<str:namespace>/<str:name>/", cluster.PodGroupDetail.as_view(), name="podgroup-detail"),
    path("pending/", cluster.PendingQueue.as_view(), name="pending"),
    path("usage/", cluster.Usage.as_view(), name="usage"),
    path("idle/", idle.Idle.as_view(), name="idle"),
    path("idle/gpu-hours/", idle.IdleGpuHours.as_view(), name="idle-per-hour"),
    path("decisions/", cluster.Decisions.as_view(), name="decisions"),
    path("simulate/", simulate.Simulate.as_view(), name="simulate"),
    path("queues/", queues.Queues.as_view(), name="queues"),
    path("queues/<str:system>/<path:name>/", queues.QueueDetail.as_view(), name="queue-detail"),
    # the dashboard's grouped answers and the what-if lab (gangweb/api/v1/views/grouped.py, simulate.py)
    path("preemptions/", grouped.Preemptions.as_view(), name="preemptions"),
    path("preemptions/lost-gpu-hours/", grouped.LostGpuHours.as_view(), name="preemptions-lost"),
    path("decisions/groups/", grouped.DecisionGroups.as_view(), name="decision-groups"),
    path("decisions/summary/", grouped.DecisionSummary.as_view(), name="decision-summary"),
    path("simulate/podgroups/", simulate.SimulatePodGroups.as_view(), name="simulate-podgroups"),
    path("requests/<int:pk>/approve/", actions.Approve.as_view(), name="request-approve"),
    path("requests/<int:pk>/reject/", actions.Reject.as_view(), name="request-reject"),
    path("requests/<int:pk>/cancel/", actions.Cancel.as_view(), name="request-cancel"),
    # notification sinks and deliveries, admin only (gangweb/api/v1/views/notify.py)
    path("notify/sinks/", notify.Sinks.as_view(), name="notify-sinks"),
    path("notify/sinks/<str:name>/", notify.SinkDetail.as_view(), name="notify-sink-detail"),
    path("notify/deliveries/", notify.Deliveries.as_view(), name="notify-deliveries"),
    *router.urls,
]
