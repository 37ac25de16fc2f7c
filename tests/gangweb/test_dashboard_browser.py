"""A real Chromium opens the demo and watches GPU squares change colour without a reload."""

from __future__ import annotations

import signal

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


SQUARE_COLOURS = "() => Array.from(document.querySelectorAll('.gpu'), e => e.style.backgroundColor)"


def test_gpu_squares_change_colour_live(start_demo, browser_page, tmp_path):
    page = browser_page
    demo = start_demo(env={"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"})
    page.goto(demo.base_url + "/")

    assert page.locator(".gpu").count() == 64 * 8
    page.wait_for_selector("#conn[data-state='live']", timeout=10_000)
    before = page.evaluate(SQUARE_COLOURS)
    assert any(before) and not all(before), "some GPUs are allocated and some are free"

    # No reload: the squares must change because the websocket said so.
    page.wait_for_function(
        f"before => ({SQUARE_COLOURS})().some((colour, i) => colour !== before[i])",
        arg=before, timeout=30_000,
    )
    assert page.evaluate("window.gangwebUpdates") >= 1
    allocated = int(page.inner_text("#stat-allocated"))
    busy = page.evaluate("document.querySelectorAll('.gpu.busy').length")
    assert allocated == busy, "the totals agree with the squares drawn"
    assert page.locator("#activity li").count() >= 1

    # gangweb's own work shows in the picture: a gang it made room for glows where it landed.
    page.wait_for_selector(".gpu.placed", timeout=30_000)
    assert "plan for" in page.inner_text("#activity")

    page.hover(".gpu.busy >> nth=0")
    assert "priority" in page.inner_text("#tooltip")
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    assert not page.errors, page.errors
    assert demo.stop(signal.SIGTERM) == 0
