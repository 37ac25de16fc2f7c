"""A real Chromium on the demo: a gang loses a member, the overview counts it broken, its squares are
hatched, and the idle figure of the last hour names its GPUs under brokenGangs."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAST = {
    "GANGWEB_SIM_TICK_SECONDS": "0.25",
    "GANGWEB_DETECT_INTERVAL_SECONDS": "1",
    "GANGWEB_SIM_LOSS_TICKS": "20",
    "GANGWEB_IDLE_SAMPLE_SECONDS": "1",
}

# The first square of a broken gang on the map, and its size (hatched only when at least 3 px).
BROKEN_SQUARE = """() => {
  const map = window.gangwebMap;
  for (let s = 0; s < map.owner.length; s++) {
    if (map.broken(map.owner[s])) {
      const r = map.squareAt(s);
      return { key: map.gangs[map.owner[s]].key, size: r.size };
    }
  }
  return null;
}"""


def test_a_gang_losing_a_member_is_counted_hatched_and_its_idle_gpus_named(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env=FAST)
    page.goto(demo.base_url + "/")
    page.wait_for_function(
        "window.gangwebMap && window.gangwebMap.stats.firstPaintMs !== null", timeout=15_000
    )
    page.wait_for_function("Number(document.getElementById('fig-broken').textContent) >= 1", timeout=60_000)
    assert "held" in page.locator("#fig-broken-lbl").inner_text()
    square = page.wait_for_function(BROKEN_SQUARE, timeout=15_000).json_value()
    assert square["key"] and square["size"] >= 3
    assert page.locator("#legend").inner_text().count("broken gang") == 1
    # The idle figure is read when the overview loads: once the sampler has counted a broken gang's GPUs,
    # the reloaded overview names them.
    page.wait_for_function(
        "fetch('/api/v1/idle/').then((r) => r.json()).then((d) => d.lastHour.brokenGangs > 0)",
        timeout=60_000,
        polling=500,
    )
    page.reload()
    page.wait_for_function(
        "document.getElementById('fig-idle-lbl').textContent.includes('broken gangs')", timeout=15_000
    )
    assert float(page.locator("#fig-idle").inner_text()) > 0
