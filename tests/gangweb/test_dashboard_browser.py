"""A real Chromium on the demo: the GPU map draws the cluster, a preemption repaints its victims' squares,
the what-if shows three plans, every page fits 420 px, a team reader sees no other team's names.

``GANGWEB_SCREENSHOT_DIR=docs/screenshots`` makes the screenshot test write there (README shows them).
"""

from __future__ import annotations

import json
import os
import re
import signal
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from scheduler.simulation import SimulatedCluster
from tests.gangweb.conftest import a_request, add_user_without_role, grant_user, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = {
    "overview": "/",
    "gangs": "/gangs/",
    "preemptions": "/preemptions/",
    "what-if": "/what-if/",
    "decisions": "/decisions/",
}
FAST = {"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1"}

# In the page: when gangweb plans a preemption, note its victims' squares and their colours now.
WATCH_THE_NEXT_PREEMPTION = """() => {
  window.watched = null;
  gangweb.live.on("plan.created", (m) => {
    const victims = (m.payload.victims || []).map((v) => `${v.namespace}/${v.name}`);
    if (window.watched || !victims.length) return;
    const map = window.gangwebMap;
    const ids = new Set(victims.map((k) => map.keyIndex.get(k)).filter((i) => i !== undefined));
    const slots = [];
    for (let s = 0; s < map.owner.length; s++) if (ids.has(map.owner[s])) slots.push(s);
    window.watched = { preemptor: m.payload.podGroup, slots, colours: slots.map((s) => map.pixel(s)) };
  });
}"""


def json_of(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def square_on_screen(page, slot: str) -> dict:
    """The middle of device ``slot`` (a JS expression over ``m``, the map) in page coordinates, its node's name
    and its gang's key, read at once: the layout moves when the page grows a scrollbar."""
    return page.evaluate(
        "(() => { const m = window.gangwebMap; const s = " + slot + "; const r = m.squareAt(s);"
        " const box = m.canvas.getBoundingClientRect(); const o = m.gangs[m.owner[s]];"
        " return {x: box.left + r.x + r.size / 2, y: box.top + r.y + r.size / 2, size: r.size, slot: s,"
        " node: m.nodes[r.node].name, gang: o && !o.other ? o.key : null}; })()"
    )


def point_at(page, slot: str, *words: str) -> dict:
    """Rest the pointer on device ``slot`` (as in ``square_on_screen``) until the tooltip names its node and
    says ``words``; returns the spot. The demo keeps ticking: the legend and figures above the map grow as
    data arrives and move the canvas, so a spot read once may be stale by the time the pointer lands."""
    for attempt in range(10):
        spot = square_on_screen(page, slot)
        page.mouse.move(spot["x"] + (attempt % 2), spot["y"])
        try:
            page.wait_for_function(
                "([node, words]) => { const t = document.querySelector('#tooltip');"
                " return !t.hidden && t.textContent.startsWith(node + ' ')"
                " && words.every((w) => t.textContent.includes(w)); }",
                arg=[spot["node"], list(words)],
                timeout=3_000,
            )
            return spot
        except PlaywrightTimeoutError:
            continue
    text = page.evaluate("document.querySelector('#tooltip').textContent")
    raise AssertionError(f"the tooltip never named {slot} with {words}: {text!r}")


def test_the_map_draws_the_cluster_and_a_preemption_repaints_its_victims(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env=FAST)
    page.goto(demo.base_url + "/")
    page.wait_for_function(
        "window.gangwebMap && window.gangwebMap.stats.firstPaintMs !== null", timeout=15_000
    )
    page.wait_for_selector("#conn[data-state='live']", timeout=10_000)
    drawn = page.evaluate(
        "(() => { const m = window.gangwebMap; let held = 0;"
        " for (const o of m.owner) if (o !== -1) held++;"
        " return {nodes: m.nodes.length, devices: m.owner.length, held,"
        " shown: Number(document.querySelector('#fig-allocated').textContent.replace(/,/g, '')),"
        " domains: m.geom.blocks.length, painted: new Set(Array.from({length: 64}, (_, i) => m.pixel(i * 8))).size}; })()"
    )
    assert (drawn["nodes"], drawn["devices"], drawn["domains"]) == (64, 512, 8)
    assert 0 < drawn["held"] < 512 and drawn["held"] == drawn["shown"], "the figures agree with the squares"
    assert drawn["painted"] > 2, "squares in several colours, not a blank canvas"

    page.evaluate(WATCH_THE_NEXT_PREEMPTION)
    page.mouse.move(0, 0)  # no hover: nothing dimmed while colours are compared
    page.wait_for_function("window.watched && window.watched.slots.length", timeout=60_000)
    # Evicted, the victims' squares are repainted (freed, or taken by the gang they made room for).
    page.wait_for_function(
        "window.watched.slots.some((s, i) => window.gangwebMap.pixel(s) !== window.watched.colours[i])",
        timeout=30_000,
    )
    preemptor = page.evaluate("window.watched.preemptor")
    page.wait_for_function(
        "(key) => { const m = window.gangwebMap; const i = m.keyIndex.get(key);"
        " return i !== undefined && m.owner.some((o) => o === i); }",
        arg=preemptor,
        timeout=30_000,
    )
    assert page.locator("#activity li").count() >= 1

    # Hover lights the gang up and names it; a click opens its node's page, which links the gang's.
    spot = point_at(page, "m.owner.findIndex((o) => o !== -1 && !m.gangs[o].other)", "priority")
    page.wait_for_function("window.gangwebMap.highlight !== null", timeout=5_000)
    page.mouse.click(spot["x"], spot["y"])
    page.wait_for_url(f"**/nodes/{spot['node']}/", timeout=10_000)
    page.locator(f"#devices a.gang-link:text-is('{spot['gang']}')").first.click()
    page.wait_for_url(f"**/gangs/{spot['gang']}/", timeout=10_000)
    assert not page.errors, page.errors
    assert demo.stop(signal.SIGTERM) == 0


def plan_a_waiting_gang(page, base_url: str, answer: str) -> str:
    """Click What if? on the page of a waiting gang and wait for ``answer`` in it; returns the gang's key.

    The page offers What if? only while its gang waits, and hides it live once the gang runs; the demo
    places its waiting gangs as room frees, the highest tier first (on a loaded machine, often between the
    API's answer and the click). So the lowest tier's are tried first, and the next one when the page hid
    What if? before it showed the answer."""
    waiting = json_of(base_url + "/api/v1/podgroups/?state=pending,short&sort=priority&limit=100")["results"]
    assert waiting, "the demo starts with gangs waiting"
    for gang in reversed(waiting):
        page.goto(base_url + f"/gangs/{gang['podGroup']}/")
        page.wait_for_selector("#state:not(:empty)", timeout=30_000)  # loaded: What if? shown or not
        if not page.is_visible("#run-whatif"):
            continue
        try:
            page.click("#run-whatif", timeout=30_000)
            page.wait_for_selector(answer, timeout=60_000)
            return gang["podGroup"]
        except PlaywrightTimeoutError:
            if page.is_visible("#run-whatif"):
                raise  # the gang still waits: What if? did not answer
    raise AssertionError(f"none of {len(waiting)} waiting gangs still waited when its page was open")


def test_the_what_if_shows_three_plans_side_by_side(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    # The demo's pages are open to anyone; planning runs the engine (POST /api/v1/simulate/), so it asks
    # for a login, and says so.
    plan_a_waiting_gang(page, demo.base_url, "#plans .error:has-text('sign in to plan')")
    grant_user(demo.var_dir, "planner", "planner-pw-31", "--role", "viewer", "--all-namespaces")
    sign_in(page, demo.base_url, "planner", "planner-pw-31")
    plan_a_waiting_gang(page, demo.base_url, "#plans .plan >> nth=2")
    assert page.locator("#plans .plan").evaluate_all("cards => cards.map(c => c.dataset.policy)") == [
        "gangweb",
        "kep5710",
        "legacy",
    ]
    feasible = page.locator("#plans .plan:not(:has(p.error))").count()
    assert page.locator("#plans .mini-map").count() == feasible, "each feasible plan draws its small map"
    page.goto(demo.base_url + "/what-if/")
    page.click("#use-live")
    page.wait_for_function("document.querySelectorAll('#podgroup-choices option').length > 0", timeout=30_000)
    page.click("#plan")
    page.wait_for_selector("#plans .plan >> nth=2", timeout=60_000)
    # An uploaded dump: its gangs listed, then its plans (the demo's own cluster, dumped as kubectl would)
    dump = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": SimulatedCluster(nodes=16, seed=11).snapshot_objects()}
    )
    page.evaluate(
        "document.querySelector('#podgroup').value = ''; document.querySelector('#plans').replaceChildren()"
    )
    page.set_input_files(
        "#snapshot", files=[{"name": "dump.yaml", "mimeType": "application/yaml", "buffer": dump.encode()}]
    )
    page.wait_for_function("document.querySelector('#podgroup').value !== ''", timeout=30_000)
    page.click("#plan")
    page.wait_for_selector("#plans .plan >> nth=2", timeout=60_000)
    page.set_input_files(
        "#snapshot", files=[{"name": "bad.yaml", "mimeType": "application/yaml", "buffer": b"{: nope"}]
    )
    page.wait_for_selector("#error:not([hidden])", timeout=30_000)
    assert "snapshot" in page.inner_text("#error")
    assert not page.errors, page.errors


def test_the_gangs_page_reads_the_api_and_its_url_keeps_the_filters(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    page.goto(demo.base_url + "/gangs/?state=pending%2Cshort&sort=priority")
    page.wait_for_selector("#gangs tbody tr", timeout=30_000)
    assert page.locator("select[name=state]").input_value() == "pending,short"
    assert page.locator("select[name=sort]").input_value() == "priority"
    shown = page.locator("#gangs tbody tr td[data-label=Gang]").all_inner_texts()
    served = json_of(demo.base_url + "/api/v1/podgroups/?state=pending,short&sort=priority&limit=1000")
    keys = [r["podGroup"] for r in served["results"]]
    # The demo moves on between the two reads: the page's rows are the API's, in the API's order.
    assert shown and set(shown) & set(keys), (shown, keys)
    assert (
        page.locator("#gangs tbody tr td[data-label='Why it waits']")
        .first.inner_text()
        .startswith(("needs ", "waiting for "))
    )
    page.select_option("select[name=sort]", "name")
    page.wait_for_function("location.search.includes('sort=name')", timeout=10_000)
    assert "state=pending%2Cshort" in page.evaluate("location.search")
    page.wait_for_function(
        "(() => { const t = [...document.querySelectorAll('#gangs tbody td[data-label=Gang]')]"
        ".map((c) => c.textContent.split('/')); return t.length > 0 && t.every((k, i) => i === 0 ||"
        " t[i - 1][0] < k[0] || (t[i - 1][0] === k[0] && t[i - 1][1] <= k[1])); })()",
        timeout=10_000,
    )
    page.goto(demo.base_url + "/gangs/?sort=nope")
    page.wait_for_selector("#empty:not([hidden])", timeout=10_000)
    assert "HTTP 400" in page.inner_text("#empty")
    assert not page.errors, page.errors


def test_the_gangs_page_shows_a_page_at_a_time_and_more_on_request(start_demo, browser_page):
    """The page asks v1 for one page (100 rows; 5 here, the request rewritten, as the demo has fewer
    gangs) and "Show more" follows v1's ``next``: the same filters, the rows after."""
    page = browser_page
    demo = start_demo()
    asked = []

    def five_a_page(route):
        query = parse_qs(urlsplit(route.request.url).query)
        asked.append(query)
        if query.get("limit") == ["100"]:
            return route.continue_(url=route.request.url.replace("limit=100", "limit=5"))
        route.continue_()

    page.route("**/api/v1/podgroups/?*", five_a_page)
    # Without a sort in the URL the rows come in the order the form shows.
    page.goto(demo.base_url + "/gangs/")
    page.wait_for_selector("#gangs tbody tr", timeout=30_000)
    shown = page.locator("select[name=sort]").input_value()
    assert asked[0]["sort"] == [shown] == ["waiting"], asked[0]
    asked.clear()
    page.goto(demo.base_url + "/gangs/?sort=name")
    page.wait_for_selector("#gangs tbody tr", timeout=30_000)
    assert (asked[0]["limit"], asked[0]["sort"]) == (["100"], ["name"])
    assert page.locator("#gangs tbody tr").count() == 5
    assert page.locator("#more").is_visible()
    page.click("#more")
    page.wait_for_function("document.querySelectorAll('#gangs tbody tr').length === 10", timeout=10_000)
    assert (asked[-1]["limit"], asked[-1]["offset"], asked[-1]["sort"]) == (["5"], ["5"], ["name"])
    keys = [k.split("/") for k in page.locator("#gangs tbody td[data-label=Gang]").all_inner_texts()]
    assert len({tuple(k) for k in keys}) == 10 and keys == sorted(keys), keys
    assert ", 10 shown" in page.inner_text("#count")
    assert page.evaluate("location.search") == "?sort=name"
    assert not page.errors, page.errors


def test_the_gangs_page_says_next_try_only_for_a_gang_gangweb_retries(start_demo, browser_page):
    """v1's ``retryAt`` is when gangweb may open a gang's next request, after any request; the page says
    "next try" only where one comes: after a failed or infeasible one (the API's answer rewritten here)."""
    page = browser_page
    demo = start_demo()
    states = ["succeeded", "infeasible", "failed", "awaiting_approval"]

    ahead = (datetime.now(UTC) + timedelta(hours=1)).isoformat()

    def with_verdicts(route):
        body = route.fetch().json()
        for row, state in zip(body["results"], states, strict=False):
            row["state"] = "pending"
            row["verdict"] = {
                "request": 7,
                "state": state,
                "mode": "enforce",
                "outcome": None,
                "reason": "",
                "at": "2026-12-01T08:00:00Z",
                "retryAt": ahead,
            }
        route.fulfill(json=body)

    page.route("**/api/v1/podgroups/?*", with_verdicts)
    page.goto(demo.base_url + "/gangs/?sort=name")
    page.wait_for_selector("#gangs tbody tr:nth-child(4)", timeout=30_000)
    said = page.locator("#gangs tbody tr td[data-label=gangweb]").all_inner_texts()[:4]
    words = [state.replace("_", " ") for state in states]  # "awaiting approval"
    assert [s.startswith(f"#7 {word}") for s, word in zip(said, words, strict=True)] == [True] * 4, said
    assert ["next try" in s for s in said] == [False, True, True, False], said
    assert not page.errors, page.errors


def test_the_gangs_page_says_no_past_next_try_and_calls_no_running_gang_infeasible(start_demo, browser_page):
    """Item 5 of issue 31: a retry time gone by is no "next try", a gang that runs now is not called
    infeasible, and the gangweb column does not explain the wait again in other words."""
    page = browser_page
    demo = start_demo()
    passed = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    rows = [("pending", "infeasible"), ("running", "infeasible")]

    def with_verdicts(route):
        body = route.fetch().json()
        for row, (state, verdict) in zip(body["results"], rows, strict=False):
            row["state"] = state
            row["verdict"] = {
                "request": 7,
                "state": verdict,
                "mode": "enforce",
                "outcome": "infeasible:no-room",
                "reason": "not enough room in any one rack",
                "at": "2026-12-01T08:00:00Z",
                "retryAt": passed,
            }
        route.fulfill(json=body)

    page.route("**/api/v1/podgroups/?*", with_verdicts)
    page.goto(demo.base_url + "/gangs/?sort=name")
    page.wait_for_selector("#gangs tbody tr:nth-child(2)", timeout=30_000)
    waiting, running = page.locator("#gangs tbody tr td[data-label=gangweb]").all_inner_texts()[:2]
    assert waiting == "#7 infeasible", waiting
    assert running == "last request #7 infeasible, running now", running
    assert not page.errors, page.errors


def test_the_gang_page_reads_its_podgroup_from_the_api(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    running = json_of(demo.base_url + "/api/v1/podgroups/?state=running&sort=gpus")["results"][0]
    detail = json_of(demo.base_url + f"/api/v1/podgroups/{running['podGroup']}/")
    assert detail["nodes"]
    page.goto(demo.base_url + f"/gangs/{running['podGroup']}/")
    page.wait_for_selector("#members tr", timeout=30_000)
    facts = dict(
        zip(
            page.locator("#facts dt").all_inner_texts(),
            page.locator("#facts dd").all_inner_texts(),
            strict=True,
        )
    )
    assert facts["nodes"] == ", ".join(detail["nodes"])
    assert facts["disruption"] == detail["disruptionMode"]
    assert page.locator("#members tr").count() == len(detail["members"])
    assert page.inner_text("#state") == "running"
    # A gang the cluster does not have (any more): said so, its requests and its evictions kept, no error.
    asked = []

    def one_eviction(route):
        asked.append(parse_qs(urlsplit(route.request.url).query))
        row = {"createdAt": "2026-12-01T08:13:00Z", "pod": "team-llm/gone-0", "state": "evicted", "gpus": 8}
        route.fulfill(json={"count": 1, "next": None, "previous": None, "results": [{**row, "request": 41}]})

    page.route("**/api/v1/evictions/?*", one_eviction)
    page.goto(demo.base_url + "/gangs/team-llm/no-such-gang/")
    page.wait_for_selector("#missing:not([hidden])", timeout=10_000)
    assert page.inner_text("#state") == "gone"
    assert asked and asked[0]["unit"] == ["team-llm/no-such-gang"], asked
    page.wait_for_function(
        "document.querySelector('#as-victim').textContent.includes('gone-0')", timeout=10_000
    )
    assert "team-llm/gone-0 evicted (8 GPUs), request #41" in page.inner_text("#as-victim")
    assert not page.errors, page.errors


def test_every_page_fits_420_px_without_horizontal_overflow(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    key = json_of(demo.base_url + "/api/v1/podgroups/")["results"][0]["podGroup"]
    page.set_viewport_size({"width": 420, "height": 900})
    for path in [*PAGES.values(), f"/gangs/{key}/", f"/requests/{a_request(demo.base_url)}/"]:
        page.goto(demo.base_url + path)
        page.wait_for_load_state("networkidle")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 420, f"{path} is {width} px wide at 420"
    # and the page of a signed-in user with no role (its grant command wraps)
    add_user_without_role(demo.var_dir, "nora", "nora-password-31")
    sign_in(page, demo.base_url, "nora", "nora-password-31")
    page.wait_for_selector("#no-role-title")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 420, f"the no-role page is {width} px wide at 420"
    assert not page.errors, page.errors


def test_the_theme_follows_the_toggle_and_is_kept(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    page.emulate_media(color_scheme="light")
    page.goto(demo.base_url + "/")
    assert page.evaluate("document.documentElement.dataset.resolvedTheme") == "light"
    page.get_by_role("button", name="switch between light and dark theme").click()
    page.reload()
    assert page.evaluate("document.documentElement.dataset.resolvedTheme") == "dark"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(245, 246, 248)"


def test_screenshots_of_every_page(start_demo, browser_page, tmp_path):
    out = Path(os.environ.get("GANGWEB_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    page = browser_page
    demo = start_demo(env=FAST)
    page.set_viewport_size({"width": 1400, "height": 900})
    # Let the demo's story happen first: a preemption executed, on the map and in the ledger.
    page.goto(demo.base_url + "/")
    page.wait_for_function("document.querySelectorAll('#activity li').length > 3", timeout=60_000)
    page.wait_for_timeout(20_000)
    # A time inside a feed line (a notice's deadline in its Kubernetes Event) reads in the reader's zone, never raw.
    lines = page.locator("#activity li").all_inner_texts()
    assert not [line for line in lines if re.search(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d", line)], lines
    for theme in ("light", "dark"):
        page.emulate_media(color_scheme=theme)
        page.goto(demo.base_url + "/")
        page.wait_for_timeout(3_000)
        page.screenshot(path=str(out / f"overview-{theme}.png"), full_page=True)
    page.emulate_media(color_scheme="light")
    for name, path in PAGES.items():
        if name == "overview":
            continue
        page.goto(demo.base_url + path)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(out / f"{name}.png"), full_page=True)
    # A preemption's decision view (what a card, a feed line or a gang's request links to).
    page.goto(demo.base_url + f"/requests/{a_request(demo.base_url)}/")
    page.wait_for_selector("#timeline li", timeout=30_000)
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(out / "decision.png"), full_page=True)
    # A node's page (what a click on the map opens), and the map zoomed onto a namespace's nodes.
    node = json_of(demo.base_url + "/api/v1/map/")["nodes"][0]["name"]
    page.goto(demo.base_url + f"/nodes/{node}/")
    page.wait_for_selector("#devices tr", timeout=20_000)
    page.screenshot(path=str(out / "node.png"), full_page=True)
    page.goto(demo.base_url + "/")
    page.wait_for_function(
        "window.gangwebMap && window.gangwebMap.stats.firstPaintMs !== null", timeout=20_000
    )
    page.fill("#map-search", "team-llm")
    page.press("#map-search", "Enter")
    page.wait_for_timeout(1_000)
    page.screenshot(path=str(out / "overview-search.png"))
    page.goto(demo.base_url + "/login/")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(out / "login.png"), full_page=True)
    page.set_viewport_size({"width": 420, "height": 900})
    page.goto(demo.base_url + "/")
    page.wait_for_timeout(2_000)
    page.screenshot(path=str(out / "overview-420px.png"), full_page=True)
    # What if? plans with the engine: signed in (the demo lets anyone read, not plan).
    page.set_viewport_size({"width": 1400, "height": 900})
    grant_user(demo.var_dir, "planner", "planner-pw-31", "--role", "viewer", "--all-namespaces")
    sign_in(page, demo.base_url, "planner", "planner-pw-31")
    key = json_of(demo.base_url + "/api/v1/podgroups/?state=pending,short&sort=priority")["results"]
    key = (key or json_of(demo.base_url + "/api/v1/podgroups/")["results"])[0]["podGroup"]
    page.goto(demo.base_url + f"/gangs/{key}/")
    page.click("#run-whatif")
    page.wait_for_selector("#plans .plan >> nth=2", timeout=60_000)
    page.screenshot(path=str(out / "gang.png"), full_page=True)
    assert len(list(out.glob("*.png"))) >= 12
    assert not page.errors, page.errors


def test_a_team_reader_sees_no_other_teams_names(start_demo, browser_page):
    demo = start_demo()
    grant_user(demo.var_dir, "alice", "alice-pw-31", "--role", "viewer", "--namespaces", "team-llm")
    page = browser_page
    sign_in(page, demo.base_url, "alice", "alice-pw-31")
    for path in PAGES.values():
        page.goto(demo.base_url + path)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(1_500)
        text = page.content()
        for other in ("team-vision", "team-speech", "team-recsys", "research/"):
            assert other not in text, f"{path} names {other}"
    page.goto(demo.base_url + "/")
    page.wait_for_function("window.gangwebMap && window.gangwebMap.nodes", timeout=15_000)
    names = page.evaluate("window.gangwebMap.gangs.filter(g => !g.other).map(g => g.namespace)")
    assert set(names) <= {"team-llm"}
    assert page.evaluate("window.gangwebMap.gangs.some(g => g.other)")


def test_admission_decisions_reach_the_decisions_page_live(start_demo, browser_page):
    """webhook -> recorder -> numbered event -> websocket -> /decisions/, denials with their reason."""
    from tests.admission.support import load_pod, review_bytes

    page = browser_page
    demo = start_demo()
    page.goto(demo.base_url + "/decisions/")
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
    page.wait_for_function("document.querySelectorAll('#decisions tr').length >= 2", timeout=20_000)
    text = page.inner_text("#decisions")
    assert "denied" in text and "allowed" in text
    # A reload is backfilled from the stream's log: nothing lost on load.
    page.reload()
    page.wait_for_function("document.querySelectorAll('#decisions tr').length >= 2", timeout=20_000)
    assert not page.errors, page.errors


def test_dra_devices_are_named_on_hover_and_mig_partitions_drawn_inside_their_gpu(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env={"GANGWEB_SIM_DEVICES": "dra"})
    page.goto(demo.base_url + "/")
    page.wait_for_function(
        "window.gangwebMap && window.gangwebMap.stats.firstPaintMs !== null", timeout=30_000
    )
    page.mouse.move(0, 0)
    found = page.evaluate(
        "(() => { const m = window.gangwebMap; const i = m.nodes.findIndex((n) => n.name === 'gpu-r0-n07');"
        " const s = m.start[i]; const r = (k) => m.squareAt(s + k);"
        " return {i, whole: r(0), parts: [6, 7, 8, 9].map(r), names: [0, 6].map((k) => m.devName[s + k])}; })()"
    )
    assert found["i"] >= 0 and found["names"] == ["gpu-0", "gpu-6-mig-9-0-4"]
    whole, parts = found["whole"], found["parts"]
    assert all(p["size"] < whole["size"] for p in parts), "a partition is drawn smaller than a GPU"
    first, second = parts[0], parts[1]  # GPU 6's two partitions: side by side inside one cell
    assert first["y"] == second["y"] and 0 < second["x"] - first["x"] < whole["size"]
    assert parts[2]["x"] - first["x"] >= whole["size"], "GPU 7's partitions are in the next cell"

    def hover(k: int, *words: str) -> None:
        point_at(page, f"m.start[m.nodes.findIndex((n) => n.name === 'gpu-r0-n07')] + {k}", *words)

    hover(0, "gpu-r0-n07", "gpu-0 (DRA device)")
    hover(7, "gpu-6-mig-9-4-4 (MIG 3g.40gb of GPU 6)")
    assert not page.errors, page.errors
