"""The live event publisher: one warning at each end of an outage, and batches that keep order."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from gangweb import events, stream


class DownLog:
    """The topic log with its Redis gone: every append fails as redis-py fails it."""

    def __init__(self) -> None:
        self.up = False
        self.batches: list[dict[str, list[dict]]] = []
        self.seq: dict[str, int] = {}
        self.gate: threading.Event | None = None  # set: appends wait for it (a slow Redis)
        self.entered = threading.Event()  # an append is under way

    def append_many(self, batches: dict[str, list[dict]]) -> dict[str, int]:
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(timeout=10)
        if not self.up:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 6379)")
        self.batches.append(batches)
        firsts = {}
        for topic, messages in batches.items():
            firsts[topic] = self.seq.get(topic, 0) + 1
            self.seq[topic] = self.seq.get(topic, 0) + len(messages)
        return firsts


@pytest.fixture
def log(monkeypatch):
    down = DownLog()
    monkeypatch.setattr(stream, "append_many", down.append_many)
    monkeypatch.setattr(events, "_outage", events._Outage())
    yield down
    down.gate = None
    events.flush()


def warned(caplog, text: str, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text in r.getMessage() for r in caplog.records if r.name == "gangweb.events"):
            return True
        time.sleep(0.02)
    return False


def test_an_outage_is_logged_once_at_each_end_and_what_it_held_is_sent_after(log, caplog):
    caplog.set_level(logging.INFO, logger="gangweb.events")
    for n in range(20):
        events.publish("eviction", {"n": n})  # never raises into the pipeline
    assert warned(caplog, "not reaching the dashboard")
    log.up = True
    events.publish("eviction", {"n": 20})
    events.publish("eviction", {"n": 21})
    assert events.flush(30)
    records = [r for r in caplog.records if r.name == "gangweb.events"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.WARNING]
    started, ended = records
    assert "not reaching the dashboard" in started.getMessage() and "6379" in started.getMessage()
    assert not started.exc_info and not ended.exc_info  # no tracebacks
    assert "again" in ended.getMessage() and "0 dropped" in ended.getMessage()
    assert [m["payload"]["n"] for b in log.batches for m in b["ledger"]] == list(range(22))


def test_an_outage_holds_the_newest_events_up_to_its_bound(log, caplog, monkeypatch):
    monkeypatch.setattr(events, "HOLD", 5)
    caplog.set_level(logging.INFO, logger="gangweb.events")
    log.gate = threading.Event()  # the first attempt waits until everything is queued
    for n in range(20):
        events.publish("eviction", {"n": n})
    log.gate.set()
    log.gate = None
    assert warned(caplog, "not reaching the dashboard")
    log.up = True
    assert events.flush(30)
    assert [m["payload"]["n"] for b in log.batches for m in b["ledger"]] == list(range(15, 20))
    assert warned(caplog, "15 dropped")


def test_send_raises_for_callers_that_count_their_losses(log):
    with pytest.raises(events.PublishFailed, match="Connect call failed"):
        events.send("admission.decisions", {})


def test_what_is_published_while_a_batch_is_on_its_way_leaves_together_in_order(log):
    log.up = True
    log.gate = threading.Event()  # the first append is held, as by a slow round trip
    events.publish("eviction", {"n": 0})
    assert log.entered.wait(timeout=10)
    for n in range(1, 300):
        events.publish("eviction" if n % 3 else "cluster.tick", {"n": n})
    log.gate.set()
    assert events.flush()
    assert len(log.batches) == 2, "one append for the first, one for everything published meanwhile"
    ledger = [m["payload"]["n"] for b in log.batches for m in b.get("ledger", [])]
    activity = [m["payload"]["n"] for b in log.batches for m in b.get("activity", [])]
    assert ledger == [n for n in range(300) if n % 3 or n == 0]
    assert activity == [n for n in range(1, 300) if not n % 3]


def test_a_batch_never_exceeds_what_one_script_call_can_take(log):
    log.up = True
    log.gate = threading.Event()
    events.publish("eviction", {"n": 0})
    assert log.entered.wait(timeout=10)
    for n in range(1, stream.MAX_BATCH * 2 + 2):
        events.publish("eviction", {"n": n})
    log.gate.set()
    assert events.flush()
    sizes = [len(b["ledger"]) for b in log.batches]
    assert sizes == [1, stream.MAX_BATCH, stream.MAX_BATCH, 1]
    assert [m["payload"]["n"] for b in log.batches for m in b["ledger"]] == list(range(sum(sizes)))
