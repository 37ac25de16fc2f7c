"""A real Chromium on the demo: the preemption timeline grows without a reload as the pipeline works."""

from __future__ import annotations

import signal

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CARD_IDS = "() => Array.from(document.querySelectorAll('#timeline-list > .tl-request'), e => Number(e.dataset.request))"


def test_the_timeline_grows_live_and_agrees_with_the_api(start_demo, browser_page, tmp_path):
    page = browser_page
    demo = start_demo(
        env={
            "GANGWEB_SIM_TICK_SECONDS": "0.25",
            "GANGWEB_DETECT_INTERVAL_SECONDS": "1",
            "GANGWEB_PENDING_GRACE_SECONDS": "1",
        }
    )
    page.goto(demo.base_url + "/")
    page.wait_for_selector("#conn[data-state='live']", timeout=10_000)
    at_load = page.evaluate(CARD_IDS)

    # No reload: a card for a request opened after the page loaded, then its victims evicted.
    page.wait_for_function(
        f"before => ({CARD_IDS})().some(id => !before.includes(id))", arg=at_load, timeout=40_000
    )
    page.wait_for_selector(".tl-request[data-state='succeeded'] .tl-pod.st-evicted i", timeout=40_000)
    assert page.evaluate("window.gangwebTimelineUpdates") >= 1
    assert "preemption timeline" in page.inner_text("#timeline").lower()

    # Every card drawn live is a request the API knows, in the same state or an earlier one.
    shown = {
        int(card.get_attribute("data-request")): card.get_attribute("data-state")
        for card in page.query_selector_all("#timeline-list > .tl-request")
    }
    api = httpx.get(f"{demo.base_url}/api/requests/?limit=1000", timeout=10).json()["results"]
    known = {row["id"]: row["state"] for row in api}
    assert set(shown) <= set(known)
    assert any(state == "succeeded" == known[i] for i, state in shown.items())
    page.screenshot(path=str(tmp_path / "timeline.png"), full_page=True)
    assert not page.errors, page.errors
    assert demo.stop(signal.SIGTERM) == 0
