"""The dashboard's preemption timeline, server-rendered from ledger rows the real pipeline wrote."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.db import OperationalError

from gangweb.dashboard import timeline
from scheduler.preemption import ledger
from scheduler.preemption.models import LedgerEntry, RequestState
from scheduler.preemption.planning import PodFacts

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("small_simulation")]


class Cards(HTMLParser):
    """Timeline cards of a page: request id -> state, victim pods (state, GPU squares), history kinds."""

    def __init__(self, html: str):
        super().__init__()
        self.cards: dict[int, dict] = {}
        self.order: list[int] = []
        self._card = self._pod = None
        self._in_kind = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "data-request" in attrs:
            self._card = int(attrs["data-request"])
            self.order.append(self._card)
            self.cards[self._card] = {"state": attrs["data-state"], "pods": {}, "kinds": [], "entries": 0}
        elif self._card is not None and "data-pod" in attrs:
            self._pod = attrs["data-pod"]
            self.cards[self._card]["pods"][self._pod] = {
                "state": attrs["data-state"],
                "squares": 0,
                "title": attrs["title"],
            }
        elif self._pod is not None and tag == "i":
            self.cards[self._card]["pods"][self._pod]["squares"] += 1
        elif self._card is not None and "data-entry" in attrs:
            self.cards[self._card]["entries"] += 1
        elif self._card is not None and tag == "span" and attrs.get("class") == "k":
            self._in_kind = True

    def handle_endtag(self, tag):
        if tag == "span" and self._pod is not None:
            self._pod = None

    def handle_data(self, data):
        if self._in_kind:
            self.cards[self._card]["kinds"].append(data)
            self._in_kind = False


@pytest.fixture
def ledger_rows(make_request):
    done = make_request("team-a")
    refused = make_request("team-b", refuse=True)
    waiting = make_request("team-c", execute_it=False)
    assert (done.request.state, refused.request.state, waiting.request.state) == (
        RequestState.SUCCEEDED,
        RequestState.FAILED,
        RequestState.PLANNED,
    )
    return done, refused, waiting


def test_the_page_shows_each_request_newest_first_with_its_victims_by_state(client, ledger_rows):
    done, refused, waiting = ledger_rows
    html = client.get("/").content.decode()
    page = Cards(html)
    assert page.order == [waiting.request.pk, refused.request.pk, done.request.pk]
    assert [page.cards[r.request.pk]["state"] for r in (done, refused, waiting)] == [
        "succeeded",
        "failed",
        "planned",
    ]

    evicted = page.cards[done.request.pk]["pods"]
    assert sorted(evicted) == sorted(done.engine_plan["evictions"])
    assert {pod["state"] for pod in evicted.values()} == {"evicted"}
    assert all(pod["squares"] == 8 for pod in evicted.values())  # one square per GPU the victim held

    refused_pod = sorted(refused.engine_plan["evictions"])[-1]
    pods = page.cards[refused.request.pk]["pods"]
    assert (
        pods[refused_pod]["state"] == "dry_run_refused"
        and "(429: Cannot evict pod" in pods[refused_pod]["title"]
    )
    assert {p["state"] for name, p in pods.items() if name != refused_pod} == {"failed"}
    assert {p["state"] for p in page.cards[waiting.request.pk]["pods"].values()} == {"planned"}
    assert f"{done.plan.evicted_gpus} GPUs" in html and "team-b/train" in html


def test_each_card_carries_the_requests_latest_history(client, ledger_rows):
    done, _, _ = ledger_rows
    card = Cards(client.get("/").content.decode()).cards[done.request.pk]
    history = list(LedgerEntry.objects.filter(request=done.request).order_by("id"))
    shown = history[-timeline.HISTORY_LINES :]
    assert card["kinds"] == [entry.kind for entry in shown]
    assert card["kinds"][-1] == "request.succeeded"
    if len(history) > len(shown):
        assert f"{len(history) - len(shown)} earlier entr" in client.get("/").content.decode()


def test_one_card_is_served_alone_for_live_updates(client, settings, ledger_rows):
    done, _, _ = ledger_rows
    response = client.get(f"/timeline/requests/{done.request.pk}/")
    assert response.status_code == 200
    card = Cards(response.content.decode())
    assert card.order == [done.request.pk]
    assert sorted(card.cards[done.request.pk]["pods"]) == sorted(done.engine_plan["evictions"])
    assert client.get("/timeline/requests/999999/").status_code == 404
    settings.DEMO = False
    assert client.get(f"/timeline/requests/{done.request.pk}/").status_code == 403


def test_the_latest_cards_are_served_alone_after_a_reconnect(client, settings, ledger_rows):
    done, refused, waiting = ledger_rows
    page = Cards(client.get("/").content.decode())
    alone = Cards(client.get("/timeline/").content.decode())
    assert alone.order == page.order == [waiting.request.pk, refused.request.pk, done.request.pk]
    assert alone.cards == page.cards
    settings.DEMO = False
    assert client.get("/timeline/").status_code == 403


def test_the_page_reads_the_ledger_in_a_fixed_number_of_queries(
    client, ledger_rows, django_assert_max_num_queries
):
    # requests, plans, evictions, history: one query each, however many rows (no query per card or pod).
    with django_assert_max_num_queries(4 + 2):  # + session and user lookups
        client.get("/")


def test_an_empty_ledger_says_so(client):
    html = client.get("/").content.decode()
    assert Cards(html).order == []
    assert 'id="timeline-empty">' in html and "No preemption yet" in html


def test_the_picture_still_loads_when_the_ledger_cannot_be_read(client, monkeypatch):
    def unreadable(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(timeline, "latest_cards", unreadable)
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "cannot read the ledger: connection refused" in html and 'id="initial-state"' in html


def test_observe_mode_shows_what_kube_scheduler_did_beside_gangwebs_plan(client, make_request):
    made = make_request("team-o", execute_it=False, mode="observe")
    pods = ["batch/mid-0", "batch/mid-1"]
    ledger.record_observed_victims(
        made.request.pk,
        {"Pod batch/mid-0": pods[:1], "Pod batch/mid-1": pods[1:]},
        {pod: PodFacts(uid="", node=f"node-{i + 2}", gpus=8) for i, pod in enumerate(pods)},
    )
    html = client.get(f"/timeline/requests/{made.request.pk}/").content.decode()
    card = Cards(html).cards[made.request.pk]
    assert "kube-scheduler preempted" in html and f"gangweb plan {made.plan.pk}" in html
    # gangweb's own plan is still "planned" (observe mode never evicts); kube-scheduler's victims are evicted.
    assert {name: pod["state"] for name, pod in card["pods"].items()} == {
        **{pod: "planned" for pod in made.engine_plan["evictions"] if pod not in pods},
        **{pod: "evicted" for pod in pods},
    }
    body = client.get(f"/api/requests/{made.request.pk}/").json()
    assert [plan["source"] for plan in body["plans"]] == ["engine", "kube-scheduler"]
    assert body["plans"][1]["evictions"] == pods and body["plans"][1]["cost"]["evictedGpus"] == 16
