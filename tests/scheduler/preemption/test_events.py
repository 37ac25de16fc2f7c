"""The pipeline's events go through the publisher gangweb hands in at startup (scheduler.preemption.events)."""

from __future__ import annotations

import logging

from scheduler.preemption import events


def test_gangweb_connects_its_publisher_at_startup():
    from gangweb import events as gangweb_events

    assert events._publisher is gangweb_events.publish


def test_events_go_to_the_connected_publisher(monkeypatch):
    sent = []
    monkeypatch.setattr(events, "_outbox", None)
    monkeypatch.setattr(events, "_publisher", lambda kind, payload: sent.append((kind, payload)))
    events.publish("plan.created", {"request": 1})
    assert sent == [("plan.created", {"request": 1})]


def test_without_a_publisher_events_are_dropped_with_one_warning(monkeypatch, caplog):
    monkeypatch.setattr(events, "_publisher", None)
    monkeypatch.setattr(events, "_outbox", None)
    monkeypatch.setattr(events, "_warned", False)
    caplog.set_level(logging.WARNING, logger=events.__name__)
    for n in range(3):
        events.publish("eviction", {"n": n})  # never raises into the pipeline
    [warning] = [r for r in caplog.records if r.name == events.__name__]
    assert "no publisher is connected" in warning.getMessage() and "'eviction'" in warning.getMessage()
