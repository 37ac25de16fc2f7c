"""Webhook routes, included at the project root: ``/admission/mutate`` and ``/admission/validate``."""

from django.urls import path

from admission import views

app_name = "admission"

urlpatterns = [
    path("admission/mutate", views.mutate, name="mutate"),
    path("admission/validate", views.validate, name="validate"),
]
