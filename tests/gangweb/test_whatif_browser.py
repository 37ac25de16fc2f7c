"""What if? in a real Chromium on the demo (issue 31, item 9): only waiting gangs are offered, found by
typing in a searchable list, a gang not offered is refused with a reason, and the small maps have a legend;
a gang's own page offers it only while the gang has pods to place."""

from __future__ import annotations

import pytest

from tests.gangweb.conftest import grant_user, sign_in
from tests.gangweb.test_dashboard_browser import json_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_what_if_offers_waiting_gangs_in_a_searchable_list_and_explains_its_small_maps(
    start_demo, browser_page
):
    page = browser_page
    demo = start_demo()
    grant_user(demo.var_dir, "planner", "planner-pw-31", "--role", "viewer", "--all-namespaces")
    sign_in(page, demo.base_url, "planner", "planner-pw-31")
    page.goto(demo.base_url + "/what-if/")
    # The gangs the page was given, read from its own answer: the demo places gangs all the time, so a
    # second read of the API would find some of the offered ones running by then.
    with page.expect_response("**/api/v1/simulate/podgroups/", timeout=60_000) as listed:
        page.click("#use-live")
    gangs = listed.value.json()["podGroups"]
    page.wait_for_function("document.querySelectorAll('#podgroup-choices option').length > 0", timeout=60_000)
    offered = page.evaluate("[...document.querySelectorAll('#podgroup-choices option')].map((o) => o.value)")
    running = {g["podGroup"] for g in gangs if g["state"] == "running"}
    assert running, "the demo runs gangs"
    assert not set(offered) & running, "a running gang has nothing to plan"
    assert set(offered) == {g["podGroup"] for g in gangs} - running, "every other gang is offered"
    assert page.evaluate("document.querySelector('#podgroup').tagName") == "INPUT"
    assert "running gang" in page.inner_text("#podgroup-count") and "not offered" in page.inner_text(
        "#podgroup-count"
    )

    # A running gang typed in is refused, with the reason.
    page.fill("#podgroup", sorted(running)[0])
    page.click("#plan")
    page.wait_for_selector("#error:not([hidden])", timeout=10_000)
    assert "not a waiting gang" in page.inner_text("#error")

    page.fill("#podgroup", offered[0])
    page.click("#plan")
    page.wait_for_selector("#plans .plan >> nth=2", timeout=90_000)
    if page.locator("#plans .mini-map").count():
        legend = page.inner_text("#plans .mini-legend")
        for words in ("freed by an eviction", "taken by the gang", "free"):
            assert words in legend
    assert not page.errors, page.errors


def test_a_gangs_page_offers_what_if_while_it_waits_never_once_it_runs(start_demo, browser_page):
    page = browser_page
    demo = start_demo()

    def shown(key: str) -> tuple[str, bool]:
        """The gang's page once loaded: its state as said, and whether What if? is offered."""
        page.goto(demo.base_url + f"/gangs/{key}/")
        page.wait_for_selector("#members tr", timeout=30_000)
        return page.inner_text("#state"), page.locator("#run-whatif").is_visible()

    # the highest tier's running gangs: the demo evicts nothing of theirs while the page loads
    running = json_of(demo.base_url + "/api/v1/podgroups/?state=running&sort=priority")["results"]
    assert running, "the demo runs gangs"
    assert shown(running[0]["podGroup"]) == ("running", False)

    waiting = json_of(demo.base_url + "/api/v1/podgroups/?state=pending,short&sort=priority")["results"]
    assert waiting, "the demo has waiting gangs"
    # the lowest tier's first: the demo places waiting gangs as room frees, the highest tier first, and a
    # gang placed between the API's answer and its page is one its page rightly calls running
    for gang in reversed(waiting):
        state, offered = shown(gang["podGroup"])
        if state != "running":
            break
    assert state != "running", "every waiting gang was placed before its page was read"
    assert offered, f"a {state} gang is not offered What if?"
    assert not page.errors, page.errors
