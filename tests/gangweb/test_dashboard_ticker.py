"""The dashboard's ticker (gangweb/dashboard/live.py:run_ticker): a tick that fails or runs slow is said
once, not every interval."""

from __future__ import annotations

import asyncio
import logging
import time

from gangweb.dashboard import live


async def run_for_ticks(monkeypatch, tick, ticks):
    calls = []

    def counted():
        calls.append(1)
        tick()

    monkeypatch.setattr(live, "tick_and_publish", counted)
    # These ticks touch no database. A connection an earlier test's tick left open in the ticker's thread
    # would otherwise be checked here, against pytest-django's block, and fail every tick before it counts.
    monkeypatch.setattr(live, "close_old_connections", lambda: None)
    task = asyncio.ensure_future(live.run_ticker(0.001))
    while len(calls) < ticks:
        await asyncio.sleep(0.01)
    task.cancel()


async def test_slow_ticks_are_reported_once_with_their_count(monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger=live.logger.name)
    await run_for_ticks(monkeypatch, lambda: time.sleep(0.01), ticks=6)
    slow = [r for r in caplog.records if r.getMessage() == "dashboard tick slower than its interval"]
    assert len(slow) == 1 and slow[0].slowTicks == 1


async def test_the_same_failure_is_logged_once(monkeypatch, caplog):
    caplog.set_level(logging.ERROR, logger=live.logger.name)

    def broken():
        raise RuntimeError("cluster unreachable")

    await run_for_ticks(monkeypatch, broken, ticks=5)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == ["dashboard tick failed"]
