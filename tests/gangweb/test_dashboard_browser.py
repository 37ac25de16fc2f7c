"""A real Chromium opens the demo and watches GPU squares change colour without a reload."""

from __future__ import annotations

import json
import signal
import urllib.request

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
        arg=before,
        timeout=30_000,
    )
    assert page.evaluate("window.gangwebUpdates") >= 1
    # One read of both: a tick every 0.25 s redraws them together, and could land between two reads.
    allocated, busy = page.evaluate(
        "[Number(document.querySelector('#stat-allocated').textContent),"
        " document.querySelectorAll('.gpu.busy').length]"
    )
    assert allocated == busy, "the totals agree with the squares drawn"
    assert page.locator("#activity li").count() >= 1

    # gangweb's own work shows in the picture: a gang it made room for glows where it landed.
    page.wait_for_selector(".gpu.placed", timeout=30_000)
    assert "plan for" in page.inner_text("#activity")

    # The square hovered can be freed by a tick between finding it and the mouse arriving (its tip
    # then says "free GPU"): hover a busy square again, from outside the picture, until one stays busy.
    for _ in range(20):
        page.mouse.move(0, 0)
        page.hover(".gpu.busy >> nth=0")
        if "priority" in page.inner_text("#tooltip"):
            break
    assert "priority" in page.inner_text("#tooltip")
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    assert not page.errors, page.errors
    assert demo.stop(signal.SIGTERM) == 0


def test_admission_decisions_show_in_the_activity_log(start_demo, browser_page):
    """A pod through the webhook reaches the page: webhook -> recorder -> event -> websocket -> browser."""
    from tests.admission.support import load_pod, review_bytes

    page = browser_page
    demo = start_demo()
    page.goto(demo.base_url + "/")
    page.wait_for_selector("#conn[data-state='live']", timeout=10_000)

    def post(route: str, pod: dict, uid: str) -> dict:
        request = urllib.request.Request(
            demo.base_url + f"/admission/{route}",
            data=review_bytes(pod, uid=uid),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())["response"]

    assert post("mutate", load_pod("job-parallel.yaml"), "m-1")["patchType"] == "JSONPatch"
    too_big = load_pod("lws-worker.yaml")
    too_big["metadata"]["annotations"]["gangweb.io/min-count"] = "9"
    assert post("validate", too_big, "v-1")["allowed"] is False

    page.wait_for_function(
        "document.querySelector('#activity').innerText.includes('into PodGroups: resnet-train')",
        timeout=15_000,
    )
    log = page.inner_text("#activity")
    assert "webhook put 1 pod into PodGroups: resnet-train" in log
    assert "webhook denied Pod" in log and "min-count" in log
    assert not page.errors, page.errors
    assert demo.stop(signal.SIGTERM) == 0
