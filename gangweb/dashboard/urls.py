from django.urls import path

from gangweb.dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("", views.cluster, name="cluster"),
    path("timeline/", views.timeline_list, name="timeline"),
    path("timeline/requests/<int:request_id>/", views.timeline_card, name="timeline-card"),
    path("replay/", views.replay_page, name="replay"),
    path("replay/<str:name>", views.replay_plot, name="replay-plot"),
]
