"""Every page in a real Chromium under its Content-Security-Policy: the policy is sent, forbids inline
scripts and framing, and no page breaks it (no ``securitypolicyviolation`` event, no "Refused to" console
message), each page's own scripts having run.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.gangweb.conftest import a_request, add_user_without_role, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.csp]

# In every document, before its own scripts: note each violation the browser reports.
COLLECT_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:${e.lineNumber})`);
});
"""

# Redoc's footer asks Redocly's CDN for a logo: blocked on purpose (gangweb/security.py), Redoc hides it.
REDOCLY_LOGO = "img-src blocked https://cdn.redoc.ly/"
# DRF's and drf-spectacular's pages: their own policy, inline styles allowed.
API_HTML = ("/api/docs/", "/api/redoc/", "/api/v1/")

# path -> a selector that shows up only once the page's own scripts have run (or its markup, for pages
# without scripts).
PAGES = {
    "/": "#conn[data-state='live']",
    "/gangs/": "#conn[data-state='live']",
    "/preemptions/": "#conn[data-state='live']",
    "/what-if/": "#conn[data-state='live']",
    "/decisions/": "#conn[data-state='live']",
    "/replay/": "main .replay h1",
    "/admin/": "#content h1",
    "/admin/auth/user/": "#result_list",
    "/api/docs/": ".swagger-ui .information-container .title",
    "/api/redoc/": "[role='search'], .api-content h1",
    "/api/v1/": ".response-info",
    "/api/v1/requests/": ".response-info",
    "/no-such-page/": "h1",
}


def first_gang(base_url: str) -> str:
    with urllib.request.urlopen(base_url + "/api/v1/podgroups/?sort=priority", timeout=30) as answer:
        return json.loads(answer.read())["results"][0]["podGroup"]


def test_every_page_loads_under_its_policy_without_a_violation(start_demo, browser_page):
    page = browser_page
    demo = start_demo()
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.add_init_script(COLLECT_VIOLATIONS)

    # The sign-in page itself, then every page as the demo's admin (the admin site included).
    answer = page.goto(demo.base_url + "/login/")
    policies = {"/login/": answer.headers.get("content-security-policy", "")}
    violations = {"/login/": page.evaluate("window.cspViolations")}
    user, password = demo.login.split(" / ", 1)
    sign_in(page, demo.base_url, user, password)

    pages = {
        **PAGES,
        f"/gangs/{first_gang(demo.base_url)}/": "#conn[data-state='live']",
        f"/requests/{a_request(demo.base_url)}/": "#timeline li",
    }
    for path, ready in pages.items():
        answer = page.goto(demo.base_url + path)
        page.wait_for_selector(ready, timeout=30_000)
        policies[path] = answer.headers.get("content-security-policy", "")
        violations[path] = page.evaluate("window.cspViolations")

    # A signed-in user with no role: the page that says so.
    page.get_by_role("button", name="Sign out").first.click()
    page.wait_for_url("**/login/")
    add_user_without_role(demo.var_dir, "nora", "nora-password-31")
    sign_in(page, demo.base_url, "nora", "nora-password-31")
    answer = page.goto(demo.base_url + "/")
    page.wait_for_selector("#no-role-title")
    policies["/ (no role)"] = answer.headers.get("content-security-policy", "")
    violations["/ (no role)"] = page.evaluate("window.cspViolations")

    violations["/api/redoc/"] = [v for v in violations["/api/redoc/"] if not v.startswith(REDOCLY_LOGO)]
    assert {path: v for path, v in violations.items() if v} == {}
    assert [text for text in refused if "cdn.redoc.ly" not in text] == []
    assert not page.errors, page.errors
    for path, policy in policies.items():
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives.get("script-src") == "'self'", (path, policy)
        assert directives.get("frame-ancestors") == "'none'", (path, policy)
        assert directives.get("object-src") == "'none'", (path, policy)
        assert ("unsafe-inline" in directives["style-src"]) == path.startswith(API_HTML), (path, policy)
