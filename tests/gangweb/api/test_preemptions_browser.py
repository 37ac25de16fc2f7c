"""A real Chromium on the demo: /preemptions/ grows without a reload as the pipeline works, one card per
gang, executed preemptions first, and agrees with the API."""

from __future__ import annotations

import signal

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CARDS = "() => Array.from(document.querySelectorAll('#cards > .card'), e => [e.dataset.key, e.dataset.state])"


def test_the_ledger_grows_live_grouped_by_gang_and_agrees_with_the_api(start_demo, browser_page):
    page = browser_page
    demo = start_demo(
        env={
            "GANGWEB_SIM_TICK_SECONDS": "0.25",
            "GANGWEB_DETECT_INTERVAL_SECONDS": "1",
            "GANGWEB_PENDING_GRACE_SECONDS": "1",
        }
    )
    page.goto(demo.base_url + "/preemptions/")
    page.wait_for_selector("#conn[data-state='live']", timeout=10_000)
    # No reload: an executed preemption shows, first, with what it evicted in counted words.
    page.wait_for_selector("#cards > .card.executed", timeout=60_000)
    first = page.locator("#cards > .card").first
    assert "executed" in (first.get_attribute("class") or "")
    assert "evicted" in first.inner_text() and " 1 pods" not in first.inner_text()
    # Each executed plan says whether it is proven cheapest, as the API has it.
    key = first.get_attribute("data-key")
    namespace, name = key.split("/")
    card = next(
        c
        for c in httpx.get(
            f"{demo.base_url}/api/v1/preemptions/?gang={name}&namespace={namespace}", timeout=10
        ).json()["results"]
        if c["podGroup"] == key
    )
    optimality = next(r["plan"]["optimality"] for r in card["runs"] if r["executed"])
    mark = first.locator(".runs > li.executed .optimality").first
    assert mark.inner_text() == ("proven cheapest" if optimality == "proven" else "heuristic")
    # The simulated cluster serves every workload kind: no banner of what gangweb cannot do.
    assert page.locator("#served-banner").is_hidden()
    cards = page.evaluate(CARDS)
    keys = [key for key, _ in cards]
    assert len(keys) == len(set(keys)), "one card per gang"
    api = httpx.get(f"{demo.base_url}/api/requests/?limit=1000", timeout=10).json()["results"]
    assert {key for key, _ in cards} <= {row["podGroup"] for row in api}
    # The filters live in the URL.
    namespace = keys[0].split("/")[0]
    page.fill("input[name=namespace]", namespace)
    page.wait_for_function("ns => location.search.includes('namespace=' + ns)", arg=namespace, timeout=10_000)
    page.wait_for_function(
        "ns => Array.from(document.querySelectorAll('#cards > .card')).every(c => c.dataset.key.startsWith(ns + '/'))",
        arg=namespace,
        timeout=10_000,
    )
    assert not page.errors, page.errors
    assert demo.stop(signal.SIGTERM) == 0
