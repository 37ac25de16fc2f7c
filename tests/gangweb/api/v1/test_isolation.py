"""Tenant isolation over every v1 endpoint, generated from the URL conf: a reader of team-a never reads
team-b's (or the victims' namespace's) objects, in lists, details, aggregates or actions.

A new route under /api/v1/ is covered without a test of its own: lists and aggregates need nothing;
a route with parameters needs one line in ``EXAMPLES`` (the test fails until it has one), and an
aggregate without any name in it one line in ``COUNTED`` saying what the scope leaves out (or, where
the world here cannot show it, one in ``NAMELESS`` naming the test that does).
"""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.gangweb.api.v1.conftest import HIDDEN

pytestmark = pytest.mark.django_db(transaction=True)


def v1_routes() -> list[tuple[list[str], str, object]]:
    """(its parameters, name, callback) of every pattern under ``api:v1``."""

    def walk(patterns, namespaces):
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, namespaces + ([p.namespace] if p.namespace else []))
            elif isinstance(p, URLPattern) and namespaces == ["api", "v1"]:
                yield sorted(p.pattern.regex.groupindex), p.name, p.callback

    return list(walk(get_resolver().url_patterns, []))


def methods(callback) -> set[str]:
    cls = callback.cls
    if getattr(callback, "actions", None):  # HEAD is GET without a body (DRF adds it once served)
        return {m.upper() for m in callback.actions} - {"HEAD", "OPTIONS"}
    return {m.upper() for m in ("get", "post") if hasattr(cls, m)}


def url(name: str, kwargs: dict | None = None) -> str:
    return reverse(f"api:v1:{name}", kwargs=kwargs)


# route name -> team -> kwargs of an object of that team (None: the team-a reader has none to see).
EXAMPLES = {
    "request-detail": lambda w, team: {"pk": w.requests[team].pk},
    "plan-detail": lambda w, team: {"pk": w.plans[team].pk},
    "eviction-detail": lambda w, team: None if team == "team-a" else {"pk": w.evictions[team].pk},
    "ledger-detail": lambda w, team: {"pk": w.entries[team].pk},
    "podgroup-detail": lambda w, team: {
        "namespace": team,
        "name": "train" if team == "team-a" else "waiting-b",
    },
    "queue-detail": lambda w, team: {"system": "kueue", "name": f"{team}/main"},
    "request-approve": lambda w, team: {"pk": w.requests[team].pk},
    "request-reject": lambda w, team: {"pk": w.requests[team].pk},
    "request-cancel": lambda w, team: {"pk": w.requests[team].pk},
}
# Aggregates that name nobody (so no name can leak, and none shows that the cut happened): what the
# admin's answer counts beyond the team-a reader's. (reader's body, admin's body) -> True when cut.
COUNTED = {
    "overview": lambda mine, everything: (
        mine["totals"]["waitingGangs"] < everything["totals"]["waitingGangs"]
        and mine["history"][-1]["allocatedGpus"] < everything["history"][-1]["allocatedGpus"]
    ),
}
POST_BODIES = {
    "simulate": lambda team: {
        "podGroup": f"{team}/train" if team == "team-a" else "team-b/waiting-b",
        "maps": True,
    }
}
# POSTs that name no object: their answer is cut to the reader, like a list's.
POST_LISTS = {"simulate-podgroups": {}}
# Aggregates that name nothing (so an admin's answer cannot show team-b either): where their scope is tested.
NAMELESS = {
    "preemptions-lost": "tests/gangweb/api/v1/test_grouped.py (a reader's own lost GPU-hours)",
    "decision-summary": "tests/gangweb/api/v1/test_grouped.py (a reader's own decisions counted)",
    "idle": "tests/gangweb/api/v1/test_idle.py (a reader's own idle figures and broken gangs)",
    "idle-per-hour": "tests/gangweb/api/v1/test_idle.py (a reader's own idle GPU-hours per hour)",
}

# Objects every reader reads, cut inside (route name -> its URL's parameters, an object holding team-b's
# things): the team-a reader gets it without a name of team-b, the admin's answer names team-b.
SHARED = {"node-detail": {"name": "node-4"}}

# Admin data: every reader below an admin of every namespace is refused, whatever it asks (route name ->
# its URL's parameters); their answers are tested in tests/gangweb/notify/test_admin.py.
ADMIN_ONLY = {"notify-sinks": {}, "notify-sink-detail": {"name": "team-b-chat"}, "notify-deliveries": {}}

ROUTES = v1_routes()


def assert_hides(response, asked: dict | None = None):
    """Nothing of ``HIDDEN`` in the body, but what the reader asked for itself (a 404 names the path)."""
    text = response.content.decode()
    for value in (asked or {}).values():
        text = text.replace(str(value), "")
    for word in HIDDEN:
        assert word not in text, f"{response.request['PATH_INFO']} shows {word!r}: {text[:2000]}"


def test_the_v1_routes_are_found():
    names = {name for _, name, _ in ROUTES}
    assert {"nodes", "podgroups", "request-list", "simulate", "usage", "pending", "decisions"} <= names
    assert {"preemptions", "preemptions-lost", "decision-groups", "decision-summary"} <= names
    assert "simulate-podgroups" in names


@pytest.mark.parametrize("params, name, callback", ROUTES, ids=[r[1] for r in ROUTES])
def test_a_team_a_reader_never_reads_team_b(
    client, world, admin, a_viewer, a_operator, params, name, callback
):
    has_params = bool(params)
    if name in ADMIN_ONLY:
        route = url(name, ADMIN_ONLY[name] or None)
        for reader in (a_viewer, a_operator):
            assert client.get(route, **reader).status_code == 403
            assert client.post(route, {}, content_type="application/json", **reader).status_code in (403, 405)
            assert client.delete(route, **reader).status_code in (403, 405)
        return
    if name in SHARED:
        answer = client.get(url(name, SHARED[name]), **a_viewer)
        assert answer.status_code == 200, answer.content
        assert_hides(answer)
        everything = client.get(url(name, SHARED[name]), **admin).content.decode()
        assert any(word in everything for word in HIDDEN), f"{name}: the world has nothing of team-b here"
        assert methods(callback) == {"GET"}
        return
    route = url(name) if not has_params else name
    if has_params:
        assert name in EXAMPLES, f"add an EXAMPLES entry for the new route {name} ({params})"
    for method in sorted(methods(callback)):
        if method == "GET" and not has_params:
            answer = client.get(route, **a_viewer)
            assert answer.status_code == 200, answer.content
            assert_hides(answer)
            # The same endpoint for an admin does show team-b: the scope, not an empty cluster, hid it.
            everything = client.get(route, **admin).content.decode()
            if name in COUNTED:
                assert COUNTED[name](answer.json(), client.get(route, **admin).json()), (
                    f"{route}: the team-a reader's figures count as much as the admin's"
                )
            elif name not in ("", "root", *NAMELESS):
                assert any(word in everything for word in HIDDEN), (
                    f"{route}: the world has nothing of team-b here"
                )
        elif method == "GET":
            asked = EXAMPLES[name](world, "team-b")
            hidden = client.get(url(name, asked), **a_viewer)
            assert hidden.status_code == 404, hidden.content
            assert_hides(hidden, asked)
            own = EXAMPLES[name](world, "team-a")
            if own is not None:
                answer = client.get(url(name, own), **a_viewer)
                assert answer.status_code == 200, answer.content
                assert_hides(answer)
        elif method == "POST" and name in POST_LISTS:
            answer = client.post(route, POST_LISTS[name], content_type="application/json", **a_viewer)
            assert answer.status_code == 200, answer.content
            assert_hides(answer)
            everything = client.post(route, POST_LISTS[name], content_type="application/json", **admin)
            assert any(word in everything.content.decode() for word in HIDDEN), everything.content
        elif method == "POST" and name in POST_BODIES:
            refused = client.post(
                route, POST_BODIES[name]("team-b"), content_type="application/json", **a_viewer
            )
            assert refused.status_code == 403, refused.content
            answer = client.post(
                route, POST_BODIES[name]("team-a"), content_type="application/json", **a_viewer
            )
            assert answer.status_code == 200, answer.content
            assert_hides(answer)
        elif method == "POST":
            asked = EXAMPLES[name](world, "team-b")
            other = client.post(url(name, asked), **a_operator)
            assert other.status_code == 404, other.content
            assert_hides(other, asked)
            viewer = client.post(url(name, EXAMPLES[name](world, "team-a")), **a_viewer)
            assert viewer.status_code == 403, viewer.content
        else:
            pytest.fail(f"{route}: no isolation check for {method}")
