"""A real Chromium on the demo's pages, for the words people read: one time format (the browser's locale
and zone, UTC on hover), state names and counts in words, a preemption's victims named where the
reader may see them, a gone gang's page, and /replay/ as one of the dashboard's pages.
"""

from __future__ import annotations

import json
import urllib.request
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pytest

from tests.gangweb.conftest import grant_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAST = {"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"}
ZONE = "Asia/Kolkata"  # not the machine's: the page says the browser's zone
OTHER = "(other namespace)"  # what the API says for a name of a namespace the reader does not see


def json_of(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def ten_minutes_ago() -> datetime:
    return datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)


def cards_of(key: str, at: datetime) -> dict:
    """/api/v1/preemptions/ for one gang: an approval waiting, after a preemption that took two gangs,
    one of a namespace the reader does not see (the API has already cut its name)."""
    namespace, name = key.split("/")
    iso = at.isoformat()
    run = {"reason": "", "why": "", "count": 1, "since": iso, "until": iso}
    return {
        "count": 1,
        "next": None,
        "previous": None,
        "results": [
            {
                "namespace": namespace,
                "name": name,
                "podGroup": key,
                "requests": 2,
                "executed": 1,
                "state": "awaiting_approval",
                "latestAt": iso,
                "retryAt": None,
                "runs": [
                    {
                        **run,
                        "state": "awaiting_approval",
                        "firstRequest": 8,
                        "lastRequest": 8,
                        "executed": False,
                        "mode": "approve",
                        "plan": None,
                        "reason": f"waiting for an operator's approval until {at:%Y-%m-%d %H:%M:%S} UTC",
                    },
                    {
                        **run,
                        "state": "succeeded",
                        "firstRequest": 7,
                        "lastRequest": 7,
                        "executed": True,
                        "mode": "enforce",
                        "plan": {
                            "policy": "gangweb",
                            "feasible": True,
                            "domain": None,
                            "evictedPods": 2,
                            "evictedGpus": 16,
                            "victimUnits": 2,
                            "lostGpuHours": 1,
                            "estimatedLostGpuHours": 1,
                            "realisedLostGpuHours": 1,
                            "noticeDeadline": at.isoformat(),
                            "noticeWithdrawn": False,
                            "summary": "evicted 2 pods in 2 units, 16 GPUs",
                            "victims": ["team-llm/small-3", OTHER],
                        },
                    },
                ],
            }
        ],
    }


def zoned_page(browser_page):
    """A page of the same Chromium in another locale's words and another time zone."""
    page = browser_page.context.browser.new_page(locale="en-US", timezone_id=ZONE, bypass_csp=True)
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    return page


def test_preemptions_say_times_states_counts_and_victims_in_words(start_demo, browser_page):
    demo = start_demo()
    page = zoned_page(browser_page)
    at = ten_minutes_ago()
    key = "team-llm/big-0"
    page.route("**/api/v1/preemptions/?*", lambda route: route.fulfill(json=cards_of(key, at)))
    hour = at.replace(minute=0).isoformat()
    ranges = []

    def lost(route):
        days = int(parse_qs(urlsplit(route.request.url).query).get("days", ["2"])[0])
        ranges.append(days)
        route.fulfill(json={"days": days, "totalGpuHours": 1, "points": [{"at": hour, "lostGpuHours": 1}]})

    page.route("**/api/v1/preemptions/lost-gpu-hours/*", lost)
    page.goto(demo.base_url + "/preemptions/")
    page.wait_for_selector(f"article.card[data-key='{key}'] .runs li.executed", timeout=30_000)
    card = page.locator(f"article.card[data-key='{key}']")
    text = card.inner_text()
    assert "awaiting_approval" not in text and "now awaiting approval" in text, text
    assert "1 GPU-hour lost" in text and "GPU-hours" not in text, text
    # lost work estimated against what the evictions really lost, and the victims' notice
    assert "1 GPU-hour lost (estimated; 1 GPU-hour really lost); notice until" in text, text
    # the victims: the one the reader sees named (a link to its page), the other counted
    victims = card.locator(".runs li.executed .victims li")
    assert victims.all_inner_texts() == ["team-llm/small-3", "1 gang of other namespaces"]
    assert victims.locator("a").get_attribute("href") == "/gangs/team-llm/small-3/"
    # one time format: the browser's zone and locale, UTC on hover
    when = card.locator(".runs li.executed time")
    local = at.astimezone(ZoneInfo(ZONE)).strftime("%I:%M %p")
    assert when.inner_text().endswith(local), (when.inner_text(), local)
    assert when.get_attribute("title") == at.strftime("%Y-%m-%d %H:%M UTC")
    # a UTC time in the server's words ("until ... UTC") is said as every other time
    waiting = card.locator(".runs > li:not(.executed)")
    assert "UTC" not in waiting.inner_text(), waiting.inner_text()
    assert waiting.locator("time").nth(1).get_attribute("title") == at.strftime("%Y-%m-%d %H:%M UTC")
    # the chart's legend says the latest hour's figure (not "--"), its time in the same words
    page.wait_for_selector("#lost-chart .u-legend", timeout=10_000)
    legend = page.locator("#lost-chart .u-legend .u-value").all_inner_texts()
    assert legend and "--" not in legend, legend
    assert legend[0].endswith(("AM", "PM")), legend
    # its time range, kept in the URL
    assert ranges and ranges[-1] == 2
    with page.expect_request("**/api/v1/preemptions/lost-gpu-hours/?days=7", timeout=10_000):
        page.get_by_label("time range").select_option("7")
    assert "days=7" in page.evaluate("location.search")
    assert not page.errors, page.errors


def test_the_gang_page_names_its_victims_and_a_gone_gang_offers_no_plan(start_demo, browser_page):
    demo = start_demo()
    page = zoned_page(browser_page)
    at = ten_minutes_ago()
    key = json_of(demo.base_url + "/api/v1/podgroups/?state=running")["results"][0]["podGroup"]
    page.route("**/api/v1/preemptions/?*", lambda route: route.fulfill(json=cards_of(key, at)))

    def preemptor(route):
        body = route.fetch().json()
        row = {"id": 7, "state": "succeeded", "createdAt": at.isoformat(), "reason": ""}
        body["asPreemptor"] = [{**(body["asPreemptor"] or [{}])[0], **row}] if body["asPreemptor"] else [row]
        route.fulfill(json=body)

    page.route(f"**/api/v1/podgroups/{key}/", preemptor)
    page.goto(demo.base_url + f"/gangs/{key}/")
    page.wait_for_selector("#as-preemptor .victims li", timeout=30_000)
    assert page.locator("#as-preemptor .victims li").all_inner_texts() == [
        "team-llm/small-3",
        "1 gang of other namespaces",
    ]
    assert page.locator("#as-preemptor time").get_attribute("title") == at.strftime("%Y-%m-%d %H:%M UTC")

    # A gang the cluster no longer has: its history, no What if? to fail, no empty tables, no 404.
    page.unroute("**/api/v1/preemptions/?*")
    page.console_errors.clear()
    page.goto(demo.base_url + "/gangs/team-llm/no-such-gang/")
    page.wait_for_selector("#missing:not([hidden])", timeout=10_000)
    page.wait_for_function("document.querySelector('#as-preemptor').children.length > 0", timeout=10_000)
    page.wait_for_load_state("networkidle")
    assert page.inner_text("#state") == "gone"
    for hidden in ("#run-whatif", "#members", "#conditions", "#decisions"):
        assert not page.locator(hidden).is_visible(), f"{hidden} is shown for a gone gang"
    assert page.inner_text("#as-preemptor") == "none"
    assert not page.console_errors, page.console_errors
    assert not page.errors, page.errors


def test_the_replay_page_is_one_of_the_dashboards_pages(start_demo, browser_page):
    demo = start_demo()
    page = browser_page
    page.goto(demo.base_url + "/")
    page.get_by_role("navigation", name="pages").get_by_role("link", name="Replay").click()
    page.wait_for_selector("h1:text-is('Trace replay')", timeout=10_000)
    assert page.locator("nav a[aria-current=page]").inner_text() == "Replay"
    page.wait_for_selector("#conn[data-state='live']", timeout=10_000)
    text = page.inner_text("main")
    assert "`" not in text and str(demo.var_dir) not in text, text
    assert "--plots $GANGWEB_REPLAY_DIR" in text
    assert not page.errors, page.errors


def test_a_team_reader_sees_the_victims_of_its_namespace_only(start_demo, browser_page):
    """A real preemption of the demo: the page names the victims the API names, and a reader of one
    team's namespace sees none of another team's among them."""
    demo = start_demo(env=FAST)

    def executed() -> list[dict]:
        cards = json_of(demo.base_url + "/api/v1/preemptions/?state=succeeded")["results"]
        return [run for c in cards for run in c["runs"] if run["executed"] and run["plan"]["victims"]]

    page = browser_page
    page.goto(demo.base_url + "/preemptions/?state=succeeded")
    page.wait_for_selector(".runs li.executed .victims li", timeout=90_000)
    named = set(page.locator(".runs li.executed .victims a").all_inner_texts())
    assert named and named <= {v for run in executed() for v in run["plan"]["victims"]}, named

    grant_user(demo.var_dir, "alice", "alice-pw-31", "--role", "viewer", "--namespaces", "team-llm")
    sign_in(page, demo.base_url, "alice", "alice-pw-31")
    page.goto(demo.base_url + "/preemptions/")
    page.wait_for_load_state("networkidle")
    for victim in page.locator(".victims a").all_inner_texts():
        assert victim.startswith("team-llm/"), victim
    assert not page.errors, page.errors
