from django.urls import path

from gangweb.dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("", views.cluster, name="cluster"),
]
