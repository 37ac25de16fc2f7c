"""The GPU map in a real Chromium on the demo: find a node, gang or namespace, filter the nodes, zoom and pan
with the hover still naming the square under the pointer, a node page behind every square, and a team
viewer's legend in the colours her squares are drawn in (issue 31, items 6 and 8)."""

from __future__ import annotations

import pytest

from tests.gangweb.conftest import grant_user, sign_in
from tests.gangweb.test_dashboard_browser import json_of, point_at, square_on_screen

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIRST_PAINT = "window.gangwebMap && window.gangwebMap.stats.firstPaintMs !== null"


def matches(page) -> str:
    return page.inner_text("#map-matches")


def nodes_holding(picture: dict, words: str) -> set[str]:
    """The picture's nodes where a device is held by, or nominated for, a gang whose key holds ``words``."""
    keys = [g["key"] for g in picture["gangs"]]
    found = set()
    for node in picture["nodes"]:
        held = [o for o in node["gpus"] + (node.get("nominated") or []) if o is not None]
        if any(words in keys[o] for o in held):
            found.add(node["name"])
    return found


def test_the_map_finds_filters_zooms_and_pans(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    page.goto(demo.base_url + "/")
    page.wait_for_function(FIRST_PAINT, timeout=30_000)
    page.mouse.move(0, 0)
    picture = json_of(demo.base_url + "/api/v1/map/")
    assert page.locator(".scope-tag").count() == 0, "a reader of every namespace reads one kind of figure"

    # A node by name: one node, its GPUs; Enter zooms onto it and its squares grow.
    name = picture["nodes"][20]["name"]
    before = square_on_screen(page, f"m.start[{20}]")
    page.fill("#map-search", name)
    page.wait_for_function("document.querySelector('#map-matches').textContent.startsWith('1 node')")
    assert matches(page) == f"1 node match ({len(picture['nodes'][20]['gpus'])} GPUs)"
    page.press("#map-search", "Enter")
    page.wait_for_function("window.gangwebMap.zoom > 1")
    after = square_on_screen(page, "m.start[20]")
    box = page.locator("#gpu-map").bounding_box()
    assert (
        box["x"] <= after["x"] <= box["x"] + box["width"]
        and box["y"] <= after["y"] <= box["y"] + box["height"]
    )
    assert after["size"] > 2 * before["size"]
    # Zoomed, the pointer still names the square under it.
    page.mouse.move(after["x"], after["y"])
    page.wait_for_function(f"document.querySelector('#tooltip').textContent.startsWith('{name} ')")

    # A namespace: the nodes where its gangs hold or are nominated GPUs (counted here from map/).
    page.click("#zoom-fit")
    page.mouse.move(0, 0)
    # The squares change while the demo runs: compare with a map/ read between two identical answers.
    page.fill("#map-search", "team-llm")
    expected = nodes_holding(json_of(demo.base_url + "/api/v1/map/"), "team-llm")
    shown = page.evaluate("window.gangwebMap.matchedNodes().map((i) => window.gangwebMap.nodes[i].name)")
    assert expected and len(set(shown) ^ expected) <= 2, (sorted(shown), sorted(expected))
    assert matches(page).startswith(f"{len(shown)} node")

    # A filter: nodes with a free GPU, on a ready, schedulable node.
    page.fill("#map-search", "")
    page.select_option("#map-filter", "free")
    free = page.evaluate(
        "(() => { const m = window.gangwebMap; let n = 0;"
        " for (let i = 0; i < m.nodes.length; i++) { let f = false;"
        "  for (let s = m.start[i]; s < m.start[i + 1]; s++) if (m.owner[s] === -1) f = true;"
        "  if (f && !m.cordoned[i]) n++; } return n; })()"
    )
    assert matches(page).startswith(f"{free} node" if free != 1 else "1 node")
    page.select_option("#map-filter", "all")
    assert matches(page) == ""

    # The buttons zoom, a drag pans, and a drag's end opens no page.
    page.click("#zoom-in")
    page.wait_for_function("window.gangwebMap.zoom === 2")
    assert page.inner_text("#zoom-level") == "\u00d72.0"
    middle = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    pan = page.evaluate("[window.gangwebMap.panX, window.gangwebMap.panY]")
    page.mouse.move(*middle)
    page.mouse.down()
    page.mouse.move(middle[0] - 120, middle[1] - 60, steps=6)
    page.mouse.up()
    moved = page.evaluate("[window.gangwebMap.panX, window.gangwebMap.panY]")
    assert moved[0] > pan[0], (pan, moved)
    assert page.url == demo.base_url + "/"
    page.click("#zoom-fit")
    assert page.evaluate("window.gangwebMap.zoom") == 1
    assert not page.errors, page.errors


def test_a_click_on_a_square_opens_its_node_page(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    page.goto(demo.base_url + "/")
    page.wait_for_function(FIRST_PAINT, timeout=30_000)
    spot = point_at(page, "m.owner.findIndex((o) => o !== -1 && !m.gangs[o].other)")
    page.mouse.click(spot["x"], spot["y"])
    page.wait_for_url(f"**/nodes/{spot['node']}/", timeout=10_000)
    node = json_of(demo.base_url + f"/api/v1/nodes/{spot['node']}/")
    page.wait_for_function(
        "(n) => document.querySelectorAll('#devices tr').length === n",
        arg=len(node["devices"]),
        timeout=10_000,
    )
    assert page.inner_text("#state") == "ready"
    assert "Ready=True" in page.inner_text("#conditions")
    pods = page.locator("#pods tr")
    assert pods.count() == len(node["pods"]) > 0
    assert spot["gang"] in page.inner_text("#pods")
    assert not page.errors, page.errors


def test_the_map_stays_put_when_the_figures_above_it_fill_in(start_demo, browser_page):
    """The idle figure's label arrives after the map (the demo reads no GPU activity, so it is at its longest):
    the squares must not move under a pointer already resting on them."""
    page = browser_page
    demo = start_demo()
    page.goto(demo.base_url + "/")
    page.wait_for_function(FIRST_PAINT, timeout=30_000)
    top = page.evaluate("window.gangwebMap.canvas.getBoundingClientRect().top")
    page.wait_for_function(
        "document.getElementById('fig-idle-lbl').textContent.includes('GPU activity')", timeout=30_000
    )
    assert page.evaluate("window.gangwebMap.canvas.getBoundingClientRect().top") == top
    label = page.locator("#fig-idle-lbl")
    assert label.inner_text() in label.get_attribute("title"), "the whole label is one hover away"
    assert not page.errors, page.errors


def test_a_team_viewer_sees_other_teams_pods_on_a_node_as_counts_and_keeps_the_tier_legend(
    start_demo, browser_page
):
    demo = start_demo()
    grant_user(demo.var_dir, "alice", "alice-pw-31", "--role", "viewer", "--namespaces", "team-llm")
    page = browser_page
    sign_in(page, demo.base_url, "alice", "alice-pw-31")
    page.goto(demo.base_url + "/")
    page.wait_for_function(FIRST_PAINT, timeout=30_000)
    # Her headline figures say which count the whole cluster and which her namespaces only.
    tags = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('.figure')].map((f) =>"
        " [f.querySelector('.lbl').id || f.querySelector('.num').id, (f.querySelector('.scope-tag') || {}).textContent]))"
    )
    assert tags["fig-waiting-lbl"] == tags["fig-pre-day-lbl"] == "your namespaces", tags
    assert tags["fig-allocated"] == tags["fig-free"] == "whole cluster", tags
    # Her legend shows the tier colours her squares are drawn in.
    drawn = page.evaluate(
        "(() => { const m = window.gangwebMap; const seen = new Set(m.owner);"
        " return [...new Set(m.gangs.filter((r, i) => seen.has(i) && !r.other)"
        " .map((r) => gangweb.gangColour({tier: r.tier, shade: 1}, 'tier')))]; })()"
    )
    legend = page.evaluate(
        "[...document.querySelectorAll('#legend .swatch')].map((s) => s.style.background).filter(Boolean)"
    )
    colour = page.evaluate(
        "(cs) => cs.map((c) => { const e = document.createElement('i'); e.style.background = c;"
        " return e.style.background; })",
        drawn,
    )
    assert drawn and set(colour) <= set(legend), (colour, legend)

    # A node with another team's pods: counted, never named.
    picture = json_of(demo.base_url + "/api/v1/map/")
    keys = [g["key"] for g in picture["gangs"]]
    other = next(
        n["name"]
        for n in picture["nodes"]
        if any(o is not None and not keys[o].startswith("team-llm/") for o in n["gpus"])
    )
    page.goto(demo.base_url + f"/nodes/{other}/")
    page.wait_for_selector("#other-pods:not([hidden])", timeout=10_000)
    assert "of other namespaces" in page.inner_text("#other-pods")
    assert "in use, other namespace" in page.inner_text("#devices")
    text = page.content()
    for team in ("team-vision", "team-speech", "team-recsys", "research/"):
        assert team not in text
    assert not page.errors, page.errors


def test_a_node_page_follows_its_node_live_without_reloading(start_demo, browser_page):
    page = browser_page
    demo = start_demo(env={"GANGWEB_SIM_TICK_SECONDS": "0.5"})

    # a node whose squares change hands (the demo's gangs finish, bind and are evicted all along)
    def owners() -> dict[str, list[str | None]]:
        picture = json_of(demo.base_url + "/api/v1/map/")
        keys = [g["key"] for g in picture["gangs"]]
        return {n["name"]: [None if o is None else keys[o] for o in n["gpus"]] for n in picture["nodes"]}

    before = owners()
    page.wait_for_timeout(5_000)
    name = next(name for name, held in owners().items() if held != before[name])

    def shown() -> list[str]:
        """Who holds each device, as the page says it."""
        rows = page.locator("#devices tr").all_inner_texts()
        return [row.split("\t")[-1].split(" · ")[0].strip() for row in rows]

    def served() -> list[str]:
        node = json_of(demo.base_url + f"/api/v1/nodes/{name}/")
        return [
            f"{d['heldBy']['namespace']}/{d['heldBy']['name']}" if d["heldBy"] else "free"
            for d in node["devices"]
        ]

    page.goto(demo.base_url + f"/nodes/{name}/")
    page.wait_for_selector("#devices tr", timeout=30_000)
    first = shown()
    page.evaluate("window.sameDocument = true")
    page.wait_for_function(
        "(first) => { const now = [...document.querySelectorAll('#devices tr')]"
        ".map((r) => r.innerText.split('\\t').pop().split(' · ')[0].trim());"
        " return now.length > 0 && JSON.stringify(now) !== JSON.stringify(first); }",
        arg=first,
        timeout=120_000,
    )
    assert page.evaluate("window.sameDocument === true"), "the page was reloaded, not updated"

    # whenever the node keeps still a moment, the page says what the API says of it
    for _ in range(60):
        if shown() == served():
            break
        page.wait_for_timeout(1_000)
    assert shown() == served()
    assert not page.errors, page.errors
