"""``/api/``: v1 (``gangweb/api/v1/urls.py``), its schema and docs, and the first API's paths as
deprecated aliases of v1 (``deprecation.py``)."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from gangweb.api import views
from gangweb.api.deprecation import deprecated
from gangweb.api.v1.views import ledger
from gangweb.security import API_HTML_POLICY, with_policy

app_name = "api"

LIST, DETAIL = {"get": "list"}, {"get": "retrieve"}
# old path -> (v1 view, its actions, the v1 route name)
ALIASES = [
    ("requests/", ledger.RequestViewSet, LIST, "api:v1:request-list"),
    ("requests/<int:pk>/", ledger.RequestViewSet, DETAIL, "api:v1:request-detail"),
    ("plans/", ledger.PlanViewSet, LIST, "api:v1:plan-list"),
    ("plans/<int:pk>/", ledger.PlanViewSet, DETAIL, "api:v1:plan-detail"),
    ("evictions/", ledger.EvictionViewSet, LIST, "api:v1:eviction-list"),
    ("evictions/<int:pk>/", ledger.EvictionViewSet, DETAIL, "api:v1:eviction-detail"),
    ("ledger/", ledger.LedgerEntryViewSet, LIST, "api:v1:ledger-list"),
    ("ledger/<int:pk>/", ledger.LedgerEntryViewSet, DETAIL, "api:v1:ledger-detail"),
]

urlpatterns = [
    path("v1/", include("gangweb.api.v1.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file of its own (no inline script).
    path(
        "docs/",
        with_policy(SpectacularSwaggerSplitView.as_view(url_name="api:schema"), API_HTML_POLICY),
        name="docs",
    ),
    path(
        "redoc/",
        with_policy(SpectacularRedocView.as_view(url_name="api:schema"), API_HTML_POLICY),
        name="redoc",
    ),
    path("", deprecated(views.Root.as_view(), "api:v1:root"), name="root"),
    path("plan/", deprecated(views.WhatIfPlanView.as_view(), "api:v1:simulate"), name="what-if-plan"),
    *[
        path(
            route, deprecated(viewset.as_view(actions), successor), name=f"legacy-{successor.split(':')[-1]}"
        )
        for route, viewset, actions, successor in ALIASES
    ],
]
