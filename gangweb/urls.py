"""HTTP routes. Websocket routes live in ``gangweb/routing.py``."""

from django.contrib import admin
from django.urls import include, path

from gangweb import health, metrics

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("", include("admission.urls")),
    path("api/", include("gangweb.api.urls")),
    path("", include("gangweb.dashboard.urls")),
]
