"""Sinks (admin data: where notifications go, for which namespaces) and the outbox of deliveries.

A ``Delivery`` is written in the same transaction as the ledger row it tells of (``outbox.enqueue``), so a
committed ledger event always has its deliveries and a rolled-back one never has; each try to send it is
an ``Attempt``, kept and served by the API.
"""

from __future__ import annotations

import uuid

from django.db import models


class SinkKind(models.TextChoices):
    CLOUDEVENTS = "cloudevents", "CloudEvents 1.0 over HTTP (structured JSON)"
    SLACK = "slack", "Slack-compatible incoming webhook"
    ALERTMANAGER = "alertmanager", "Alertmanager API v2 (POST /api/v2/alerts)"


class Sink(models.Model):
    """One receiver and its route: the namespaces whose events it gets (``all_namespaces``: every one),
    optionally only some ledger event kinds."""

    name = models.SlugField(max_length=63, unique=True)
    kind = models.CharField(max_length=16, choices=SinkKind.choices)
    url = models.URLField(max_length=2000)
    all_namespaces = models.BooleanField(default=False)
    namespaces = models.JSONField(default=list, blank=True, help_text="namespaces of a tenant route")
    kinds = models.JSONField(default=list, blank=True, help_text="ledger event kinds; empty: every kind")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def route(self) -> str:
        return "*" if self.all_namespaces else ",".join(self.namespaces)


class DeliveryState(models.TextChoices):
    PENDING = "pending", "pending"
    DELIVERED = "delivered", "delivered"
    GAVE_UP = "gave_up", "gave up"


class Delivery(models.Model):
    """One ledger event for one sink, already cut to the sink's route (``payload``)."""

    sink = models.ForeignKey(Sink, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField(
        default=uuid.uuid4, help_text="the ledger event's id, the same for every sink"
    )
    kind = models.CharField(max_length=64)
    payload = models.JSONField()
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["sink", "event_id"], name="notify_one_delivery_per_sink")
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="notify_due")]


class Attempt(models.Model):
    """One try to send a delivery: when, how long, the receiver's status code or the error."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_rows")
    at = models.DateTimeField()
    seconds = models.FloatField()
    status = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    ok = models.BooleanField(default=False)

    class Meta:
        ordering = ["delivery_id", "id"]
