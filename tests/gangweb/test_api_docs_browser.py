"""The API docs (Swagger UI and Redoc) read offline in a real Chromium: every request that would leave the
machine is failed and noted, and the docs still draw, the root endpoint described in its own words
(issue 31, item 14)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.csp]

DOCS = {
    "/api/docs/": ".swagger-ui .information-container .title",
    "/api/redoc/": ".api-content h1",
}
ROOT_WORDS = "Where every list of the API v1 is"


def test_the_api_docs_draw_with_every_outside_request_failed(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    outside: list[str] = []

    def only_local(route):
        host = urlsplit(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1", "localhost"):
            return route.continue_()
        outside.append(route.request.url)
        return route.abort()

    page.route("**/*", only_local)
    for path, drawn in DOCS.items():
        page.goto(demo.base_url + path)
        page.wait_for_selector(drawn, timeout=60_000)
        assert "gangweb API" in page.inner_text(drawn)
    # Redoc's page lists every operation with its description: the root's is its own.
    page.wait_for_selector(f"text={ROOT_WORDS}", timeout=30_000)
    assert "Mixed into" not in page.content()
    assert outside == []
    assert not page.errors, page.errors
