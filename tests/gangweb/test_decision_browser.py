"""A real Chromium on the demo's decision view (/requests/<id>/): reached from a preemption card, it says
who asked, whom it evicted (another team's victims by tier, GPUs, running time and lost work, without
their names), why it was allowed, what else was tried, the timeline and the ledger entries."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from tests.gangweb.conftest import grant_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAST = {"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"}


def json_of(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def executed_across_teams(base_url: str, timeout: float = 150) -> dict:
    """A succeeded request of the demo that evicted a gang of another namespace than the preemptor's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for row in json_of(base_url + "/api/v1/requests/?state=succeeded&limit=50")["results"]:
            plans = json_of(base_url + f"/api/v1/requests/{row['id']}/")["plans"]
            victims = [v for p in plans if p["source"] == "engine" for v in p["victims"]]
            if any(v["namespace"] != row["namespace"] for v in victims):
                return row
        time.sleep(1)
    raise AssertionError("no preemption across namespaces in the demo")


def test_the_decision_view_shows_a_preemption_to_a_team_without_other_teams_names(start_demo, browser_page):
    demo = start_demo(env=FAST)
    request = executed_across_teams(demo.base_url)
    decision = json_of(demo.base_url + f"/api/v1/requests/{request['id']}/")["decision"]
    other = next(v for v in decision["victims"] if v["namespace"] != request["namespace"])

    page = browser_page
    grant_user(demo.var_dir, "tess", "tess-pw-31", "--role", "viewer", "--namespaces", request["namespace"])
    sign_in(page, demo.base_url, "tess", "tess-pw-31")
    # from the gang's preemption card, the run's link opens its decision
    page.goto(demo.base_url + f"/preemptions/?gang={request['name']}&namespace={request['namespace']}")
    page.click(f".runs a.request-link[href='/requests/{request['id']}/']", timeout=30_000)
    page.wait_for_url(f"**/requests/{request['id']}/", timeout=10_000)
    page.wait_for_selector("#victims tr", timeout=30_000)

    assert request["podGroup"] in page.inner_text("#preemptor")
    rule = page.inner_text("#rule")
    assert f"priority {decision['rule']['preemptorPriority']:,}" in rule and "ranks lower" in rule, rule
    rows = page.locator("#victims tr").all_inner_texts()
    hidden = [r for r in rows if "of another team" in r]
    assert hidden, rows
    assert f"{other['name']}" not in page.inner_text("#decision")
    assert f"{other['namespace']}/" not in page.inner_text("#decision")
    cells = page.locator("#victims tr", has_text="of another team").first.locator("td").all_inner_texts()
    assert cells[3] == str(other["gpus"]) and cells[4] not in ("", "unknown") and "GPU-hour" in cells[5], (
        cells
    )
    steps = page.locator("#timeline li").all_inner_texts()
    assert "waiting gang detected" in steps[0] and "the gang is placed" in steps[-1], steps
    assert page.locator("#ledger li code", has_text="plan.created").count() == 1
    assert not page.errors, page.errors

    # the demo's anonymous reader sees every namespace: the same decision with every victim named
    everyone = page.context.browser.new_page()
    everyone.goto(demo.base_url + f"/requests/{request['id']}/")
    everyone.wait_for_selector(f"#victims a:text-is('{other['namespace']}/{other['name']}')", timeout=30_000)
    everyone.close()
