"""Time ranges and CSV export on the history charts and lists, in a real Chromium on the demo (issue 31):
the overview's GPU chart and idle GPU-hours, and /preemptions/' lost GPU-hours and runs download as CSV,
the rows those of the range chosen."""

from __future__ import annotations

import csv
import io

import pytest

from tests.gangweb.test_dashboard_browser import FAST

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def download(page, selector: str) -> tuple[str, list[list[str]]]:
    with page.expect_download(timeout=20_000) as got:
        page.click(selector)
    saved = got.value
    return saved.suggested_filename, list(
        csv.reader(io.StringIO(open(saved.path(), encoding="utf-8").read()))
    )


def test_the_history_charts_and_lists_download_as_csv_over_their_range(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env=FAST)

    page.goto(demo.base_url + "/preemptions/")
    page.wait_for_selector("#lost-csv:not([hidden])", timeout=30_000)
    name, rows = download(page, "#lost-csv")
    assert name == "lost-gpu-hours-2d.csv" and rows[0] == ["hour (UTC)", "GPU-hours lost"]
    assert len(rows) - 1 == 48, "one row an hour of the two days shown"
    page.select_option("#lost-days", "7")
    page.wait_for_function(
        "document.querySelector('#lost-csv').download === 'lost-gpu-hours-7d.csv'", timeout=20_000
    )
    name, rows = download(page, "#lost-csv")
    assert len(rows) - 1 == 7 * 24
    # The runs: once the demo's scene has opened a request, each run shown is a row.
    page.wait_for_selector("#runs-csv:not([hidden])", timeout=90_000)
    name, rows = download(page, "#runs-csv")
    assert name == "preemptions.csv" and rows[0][:5] == [
        "gang",
        "first request",
        "last request",
        "requests",
        "state",
    ]
    shown = page.evaluate("[...document.querySelectorAll('#cards article')].map((c) => c.dataset.key)")
    assert {r[0] for r in rows[1:]} == set(shown)

    page.goto(demo.base_url + "/")
    page.wait_for_selector("#chart-csv:not([hidden])", timeout=60_000)
    name, every = download(page, "#chart-csv")
    assert name == "gpus.csv" and every[0] == ["at (UTC)", "allocated GPUs", "idle GPUs", "waiting GPUs"]
    assert len(every) > 1 and all(int(r[1]) >= 0 for r in every[1:])
    page.select_option("#chart-range", "3600")
    _, hour = download(page, "#chart-csv")
    assert 1 < len(hour) <= len(every)

    # Idle GPU-hours by cause, an hour a row: once the demo has taken an idle sample (every 10 s), the
    # hours sampled have the GPU-hours by cause the chart draws; hours without a sample are empty, not 0.
    causes = ["free while gangs wait", "broken gangs", "allocated, idle", "held for unplaced gangs"]
    page.wait_for_selector("#idle-chart canvas", timeout=90_000)
    name, rows = download(page, "#idle-csv")
    assert name == "idle-gpu-hours-2d.csv" and rows[0] == ["hour (UTC)", *(f"GPU-hours {c}" for c in causes)]
    assert len(rows) - 1 == 48, "one row an hour of the two days shown"
    sampled = [r for r in rows[1:] if r[1] != ""]
    assert 1 <= len(sampled) <= 2 and all(float(v) >= 0 for r in sampled for v in r[1:])
    assert all(r[1:] == ["", "", "", ""] for r in rows[1:] if r not in sampled)
    page.select_option("#idle-days", "1")
    page.wait_for_function(
        "document.querySelector('#idle-csv').download === 'idle-gpu-hours-1d.csv'", timeout=20_000
    )
    _, day = download(page, "#idle-csv")
    assert len(day) - 1 == 24
    assert not page.errors, page.errors
