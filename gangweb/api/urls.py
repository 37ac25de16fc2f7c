"""REST API for platform teams (DRF): the preemption ledger, read-only, and the what-if planner."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from gangweb.api import views

app_name = "api"

router = DefaultRouter()
router.APIRootView = views.APIRootView
router.register("requests", views.RequestViewSet, basename="request")
router.register("plans", views.PlanViewSet, basename="plan")
router.register("evictions", views.EvictionViewSet, basename="eviction")
router.register("ledger", views.LedgerEntryViewSet, basename="ledger")

urlpatterns = [
    path("plan/", views.WhatIfPlanView.as_view(), name="what-if-plan"),
    *router.urls,
]
