"""The pipeline's events leave by the seam gangweb connects at startup (scheduler.publishing.LEDGER)."""

from __future__ import annotations

import logging

import pytest

from scheduler import publishing
from scheduler.preemption import events


@pytest.fixture
def ledger(monkeypatch):
    """A fresh ledger seam with nothing connected, and no outbox."""
    seam = publishing.Seam("the ledger's events")
    monkeypatch.setattr(publishing, "LEDGER", seam)
    monkeypatch.setattr(events, "_outbox", None)
    return seam


def test_gangweb_connects_its_publisher_at_startup():
    from gangweb import events as gangweb_events

    assert publishing.LEDGER.publisher is gangweb_events.publish


def test_events_go_to_the_connected_publisher(ledger):
    sent = []
    ledger.connect(lambda kind, payload: sent.append((kind, payload)))
    events.publish("plan.created", {"request": 1})
    assert sent == [("plan.created", {"request": 1})]


def test_without_a_publisher_events_are_dropped_with_one_warning(ledger, caplog):
    caplog.set_level(logging.WARNING, logger=publishing.__name__)
    for n in range(3):
        events.publish("eviction", {"n": n})  # never raises into the pipeline
    [warning] = caplog.records
    assert "not reaching the dashboard" in warning.getMessage() and "'eviction'" in warning.getMessage()
    assert "nothing is connected" in warning.getMessage() and not warning.exc_info


def test_a_publisher_that_fails_never_fails_the_ledger_write(ledger, caplog):
    """The seam's one rule holds for the pipeline as for the webhook: a refusal or a bug is logged once
    when it starts and once when sending works again, never raised into the caller."""
    failing = [publishing.PublishRefused("layer down")]
    sent = []

    def publish(kind, payload):
        if failing:
            raise failing[0]
        sent.append(kind)

    ledger.connect(publish)
    caplog.set_level(logging.WARNING, logger=publishing.__name__)
    for _ in range(3):
        events.publish("eviction", {})
    failing.clear()
    events.publish("plan.created", {})
    started, ended = caplog.records
    assert "the ledger's events are not reaching the dashboard (layer down)" in started.getMessage()
    assert "reach the dashboard again" in ended.getMessage() and "3 were dropped" in ended.getMessage()
    assert sent == ["plan.created"]
