"""A real Chromium on the demo's decision view (/requests/<id>/): reached from a preemption card, it says
who asked, whom it evicted (another team's victims by tier, GPUs, running time and lost work, without
their names), why it was allowed, what else was tried, the timeline and the ledger entries."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from datetime import datetime

import pytest

from tests.gangweb.conftest import grant_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAST = {"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"}
# Preemptions carried out at once: through the demo's 10 s notice (40 ticks here) the cluster moves on, and
# most plans were withdrawn (a victim finished, the gang was placed anyway); on a loaded machine a run
# saw one plan executed in 150 s, and none across teams.
NO_NOTICE = {**FAST, "GANGWEB_PREEMPTION_NOTICE_SECONDS": "0"}


def json_of(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def executed_across_teams(base_url: str, timeout: float = 150) -> dict:
    """A succeeded request of the demo that evicted a gang of another namespace than the preemptor's."""
    deadline = time.monotonic() + timeout
    seen: set[int] = set()  # a succeeded request's plans are final: each is read once
    while time.monotonic() < deadline:
        for row in json_of(base_url + "/api/v1/requests/?state=succeeded&limit=50")["results"]:
            if row["id"] in seen:
                continue
            seen.add(row["id"])
            plans = json_of(base_url + f"/api/v1/requests/{row['id']}/")["plans"]
            victims = [v for p in plans if p["source"] == "engine" for v in p["victims"]]
            if any(v["namespace"] != row["namespace"] for v in victims):
                return row
        time.sleep(1)  # polling interval
    raise AssertionError("no preemption across namespaces in the demo")


def test_the_decision_view_shows_a_preemption_to_a_team_without_other_teams_names(start_demo, browser_page):
    demo = start_demo(env=NO_NOTICE)
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


def test_the_feed_says_each_decision_once_linked_and_can_be_paused_and_filtered(start_demo, browser_page):
    """Item 4 of issue 31: one line per decision, updated in place and linked to its decision view, no
    line said twice, a pause that holds what arrives and a filter by kind."""
    demo = start_demo(env=NO_NOTICE)
    page = browser_page
    page.goto(demo.base_url + "/")
    page.wait_for_selector("#conn[data-state='live']", timeout=30_000)
    # a decision that evicted someone: its line counts the pods, never one line per pod
    page.wait_for_selector("#activity li.decision:has-text('evicted')", timeout=120_000)
    lines = page.locator("#activity li:not([hidden])")
    texts = [t.split(" ", 1)[1] for t in lines.all_inner_texts()]
    assert len(texts) == len(set(texts)), texts
    requests = page.locator("#activity li.decision").evaluate_all("lis => lis.map(li => li.dataset.request)")
    assert len(requests) == len(set(requests)), requests
    line = page.locator("#activity li.decision:has-text('evicted')").first
    request = line.get_attribute("data-request")
    assert line.locator("a.request-link").get_attribute("href") == f"/requests/{request}/"
    assert "Preempted by" not in page.inner_text("#activity")

    page.click("#activity-pause")
    assert page.get_attribute("#activity-pause", "aria-pressed") == "true"
    before = page.inner_text("#activity")
    page.wait_for_selector("#activity-pause:has-text('held')", timeout=60_000)
    assert page.inner_text("#activity") == before, "nothing moves while the feed is paused"
    page.click("#activity-pause")
    page.wait_for_function("(before) => document.querySelector('#activity').innerText !== before", arg=before)

    page.select_option("#activity-filter", "decision")
    kinds = page.locator("#activity li:not([hidden])").evaluate_all("lis => lis.map(li => li.dataset.kind)")
    assert kinds and set(kinds) == {"decision"}, kinds
    page.click(f"#activity li.decision[data-request='{request}'] a.request-link")
    page.wait_for_url(f"**/requests/{request}/", timeout=10_000)
    page.wait_for_selector("#timeline li", timeout=30_000)
    assert not page.errors, page.errors


def test_the_demo_admits_its_own_pods_through_the_webhook(start_demo, browser_page):
    """Item 10 of issue 31: /decisions/ shows the webhook's answers for the demo's own pods, nobody posting
    a review: each gang the simulated cluster submits is reviewed pod by pod by the process's webhook."""
    demo = start_demo(env=FAST)
    page = browser_page
    page.goto(demo.base_url + "/decisions/")
    page.wait_for_selector("#conn[data-state='live']", timeout=30_000)
    page.wait_for_function(
        "[...document.querySelectorAll('#decisions tr')].some(tr => /allowed/.test(tr.innerText))",
        timeout=90_000,
    )
    kept = json_of(demo.base_url + "/api/v1/decisions/?limit=100")["results"]
    submitted = {d["namespace"] for d in kept if d["webhook"] == "mutate" and d["operation"] == "CREATE"}
    gangs = {g["namespace"] for g in json_of(demo.base_url + "/api/v1/podgroups/?limit=1000")["results"]}
    assert submitted and submitted <= gangs, (submitted, gangs)
    assert not page.errors, page.errors


def test_a_demo_restart_starts_a_new_world_without_the_old_ones_ledger_or_chart(
    start_demo, browser_page, tmp_path
):
    """Item 7 of issue 31: the simulated cluster restarts with the same names, so the old world's requests,
    counters and chart samples must not be shown beside the new one's."""
    var = tmp_path / "world"
    demo = start_demo(env=FAST, var_dir=var)
    old = json_of(demo.base_url + "/api/v1/requests/?limit=1")
    deadline = time.monotonic() + 120
    while not old["count"] and time.monotonic() < deadline:
        time.sleep(1)
        old = json_of(demo.base_url + "/api/v1/requests/?limit=1")
    assert old["count"], "the first world opened a request"
    first = old["results"][0]
    assert demo.stop(signal.SIGTERM) == 0

    restarted = time.time()
    demo = start_demo(env=FAST, var_dir=var)
    gone = urllib.request.Request(demo.base_url + f"/api/v1/requests/{first['id']}/")
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(gone, timeout=10)
    assert answer.value.code == 404
    history = json_of(demo.base_url + "/api/v1/overview/")["history"]
    assert all(datetime.fromisoformat(h["at"]).timestamp() >= restarted for h in history), history
    page = browser_page
    page.goto(demo.base_url + f"/requests/{first['id']}/")
    page.wait_for_selector("#missing:not([hidden])", timeout=30_000)
    assert not page.errors, page.errors
