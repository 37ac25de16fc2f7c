"""A real Chromium on the demo run under Kueue (``GANGWEB_SIM_QUEUES=kueue``): ``/queues/`` draws the Kueue
tree with a bar per resource, the system's figure beside gangweb's and the pending gangs as links to their
gang pages; the gangs list filters by queue and says why a gang waits; a demo without a queue manager says
it has no queues."""

from __future__ import annotations

import json
import urllib.request

import pytest

from scheduler.simulation.queues import GOVERNED

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAST = {"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"}


def json_of(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


def test_the_queues_page_draws_kueues_tree_and_its_pending_gangs(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env={**FAST, "GANGWEB_SIM_QUEUES": "kueue"})
    page.goto(demo.base_url + "/queues/")
    page.wait_for_selector("#systems section h2", timeout=60_000)
    assert page.locator("#systems section h2").all_inner_texts() == ["kueue"]
    names = page.locator("#systems td[data-label=Queue]").all_inner_texts()
    for team in GOVERNED:
        assert any(n.strip() == f"{team} (ClusterQueue)" for n in names), names
        assert any(n.strip() == f"{team}/main (LocalQueue)" for n in names), names
    assert any(n.strip() == "gpu-pool (Cohort)" for n in names), names
    # Each ClusterQueue has a bar per resource, in words for a screen reader, and both figures.
    row = page.locator("#systems tr", has_text=f"{GOVERNED[0]} (ClusterQueue)")
    labels = [b.get_attribute("aria-label") for b in row.locator(".queue-bar").all()]
    assert any(
        label.startswith("gpu: used ") and " guaranteed GPUs, borrowed " in label for label in labels
    ), labels
    assert row.locator("td[data-label='System\\'s figure']").inner_text().strip() != ""
    served = {q["name"]: q for q in json_of(demo.base_url + "/api/v1/queues/?limit=1000")["results"]}
    assert set(served) >= {*GOVERNED, "gpu-pool"}
    # A pending gang is a link to its gang page.
    page.wait_for_selector("#systems ol.pending li a", timeout=60_000)
    link = page.locator("#systems ol.pending li a").first
    gang = link.inner_text()
    link.click()
    page.wait_for_url(f"**/gangs/{gang}/**", timeout=30_000)
    assert not page.errors, page.errors


def test_the_gangs_list_filters_by_queue_and_says_why(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env={**FAST, "GANGWEB_SIM_QUEUES": "kueue"})
    team = GOVERNED[0]
    page.goto(demo.base_url + f"/gangs/?queue=kueue%2F{team}")
    page.wait_for_selector("#gangs tbody tr", timeout=60_000)
    assert page.locator("select[name=queue]").input_value() == f"kueue/{team}"
    assert page.locator("select[name=queue]").is_visible()
    gangs = page.locator("#gangs tbody td[data-label=Gang]").all_inner_texts()
    assert gangs and all(g.startswith(f"{team}/") for g in gangs), gangs
    queues = page.locator("#gangs tbody td[data-label=Queue]").all_inner_texts()
    assert set(queues) == {f"kueue {team}"}, queues
    assert not page.errors, page.errors


def test_without_a_queue_manager_the_page_says_so(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env=FAST)
    page.goto(demo.base_url + "/queues/")
    page.wait_for_selector("#empty:not([hidden])", timeout=60_000)
    assert page.inner_text("#empty") == "No queue manager's queues in this cluster."
    page.goto(demo.base_url + "/gangs/")
    page.wait_for_selector("#gangs tbody tr", timeout=60_000)
    # The Queue column is there, empty, and its filter hidden: no queue to choose.
    assert page.locator("#gangs thead th", has_text="Queue").count() == 1
    assert set(page.locator("#gangs tbody td[data-label=Queue]").all_inner_texts()) == {""}
    assert page.locator("select[name=queue]").count() == 1
    assert not page.locator("select[name=queue]").is_visible()
    assert not page.errors, page.errors
