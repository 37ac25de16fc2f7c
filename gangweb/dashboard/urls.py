"""The dashboard's pages (paths are the contract of issue 13) and the JSON they read."""

from django.urls import path

from gangweb.dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("", views.overview_page, name="overview"),
    path("gangs/", views.gangs_page, name="gangs"),
    path("gangs/<str:namespace>/<str:name>/", views.gang_page, name="gang"),
    path("nodes/<str:name>/", views.node_page, name="node"),
    path("preemptions/", views.preemptions_page, name="preemptions"),
    path("requests/<int:pk>/", views.request_page, name="request"),
    path("what-if/", views.whatif_page, name="what-if"),
    path("decisions/", views.decisions_page, name="decisions"),
    path("queues/", views.queues_page, name="queues"),
    path("replay/", views.replay_page, name="replay"),
    path("replay/<str:name>", views.replay_plot, name="replay-plot"),
]
