"""A real Chromium opens the demo and watches GPU squares change colour without a reload."""

from __future__ import annotations

import shutil
import signal

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

SQUARE_COLOURS = "() => Array.from(document.querySelectorAll('.gpu'), e => e.style.backgroundColor)"


def test_gpu_squares_change_colour_live(start_demo, tmp_path):
    if not shutil.which(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    demo = start_demo(env={"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"})
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
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
            assert not errors, errors
        finally:
            browser.close()
    assert demo.stop(signal.SIGTERM) == 0
