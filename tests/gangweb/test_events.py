"""The live event publisher during a channel-layer outage: one warning when it starts, one when it ends."""

from __future__ import annotations

import logging

import pytest

from gangweb import events


class DownLayer:
    """A channel layer whose Redis is gone: every send fails as channels-redis fails it."""

    def __init__(self) -> None:
        self.up = False
        self.sent: list[dict] = []

    async def group_send(self, group: str, message: dict) -> None:
        if not self.up:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 6379)")
        self.sent.append(message)


@pytest.fixture
def layer(monkeypatch):
    down = DownLayer()
    monkeypatch.setattr(events, "get_channel_layer", lambda: down)
    monkeypatch.setattr(events, "_target_loop", lambda layer: None)  # the caller's loop, as for in-memory
    monkeypatch.setattr(events, "_outage", events._Outage())
    return down


def test_an_outage_is_logged_once_at_each_end_and_never_raises(layer, caplog):
    caplog.set_level(logging.INFO, logger="gangweb.events")
    for n in range(20):
        events.publish("eviction", {"n": n})  # never raises into the pipeline
    layer.up = True
    events.publish("eviction", {"n": 20})
    events.publish("eviction", {"n": 21})
    records = [r for r in caplog.records if r.name == "gangweb.events"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.WARNING]
    started, ended = records
    assert "not reaching the dashboard" in started.getMessage() and "6379" in started.getMessage()
    assert not started.exc_info and not ended.exc_info  # no tracebacks
    assert "again" in ended.getMessage() and "20 events were dropped" in ended.getMessage()
    assert [m["message"]["payload"]["n"] for m in layer.sent] == [20, 21]


def test_send_raises_for_callers_that_count_their_losses(layer):
    with pytest.raises(events.PublishFailed, match="Connect call failed"):
        events.send("admission.decisions", {})
