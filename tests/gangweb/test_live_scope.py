"""What a team's viewer holds of the live stream does not count other teams' events: her positions on
the ledger are sealed, not the log's numbers, whose gaps would say how busy other teams are. A real
server process, a real Redis of the test's own, websocket clients playing the page's side."""

from __future__ import annotations

import asyncio

import pytest

from tests.gangweb.test_live_redis_restart import Page, has, publish, served

pytestmark = pytest.mark.timeout(180)


def test_a_teams_viewer_holds_positions_that_do_not_count_other_teams_events(
    asgi_server, own_redis, tmp_path
):
    address, (mine, everyone) = served(
        asgi_server, own_redis.url, tmp_path, ("team-a-viewer", "team-a"), ("every-viewer", "*")
    )

    async def scenario() -> tuple[Page, Page]:
        page, wide = Page(address, mine, ["ledger"]), Page(address, everyone, ["ledger"])
        try:
            for reader in (page, wide):
                await reader.until(lambda p: p.last["ledger"] is not None)
            publish(own_redis.url, "a-1", "team-a")
            for n in range(10):
                publish(own_redis.url, f"b-{n}", "team-b")
            publish(own_redis.url, "a-2", "team-a")
            await page.until(has("a-2"))
            await wide.until(has("a-2"))
            # Away, and back: she resumes from the position she holds, past the other team's events.
            await page.close()
            for n in range(10, 13):
                publish(own_redis.url, f"b-{n}", "team-b")
            publish(own_redis.url, "a-3", "team-a")
            await page.until(has("a-3"))
            return page, wide
        finally:
            await page.close()
            await wide.close()

    page, wide = asyncio.run(scenario())
    assert [m["payload"]["reason"] for m in page.events] == ["a-1", "a-2", "a-3"]
    assert page.connections == 2 and not page.resyncs, "resumed, not resynced"
    held = [s["topics"]["ledger"] for s in page.subscribed] + [m["seq"] for m in page.events]
    assert not any(isinstance(position, int) for position in held), held
    assert len(set(held)) == len(held) and {len(position) for position in held} == {22}
    # A viewer of every namespace, who receives every event, keeps the log's numbers.
    numbers = {m["payload"]["reason"]: m["seq"] for m in wide.events}
    assert numbers["a-2"] - numbers["a-1"] == 11
