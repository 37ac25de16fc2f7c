"""``GET /api/v1/requests/{id}/``'s decision: the preemptor and its victims (another team's without their
names, with their tier, GPUs, running time and lost work), the rule that allowed it, the plans not chosen,
the timeline and the ledger entries, and a cascade flagged from both of its ends."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from scheduler.preemption import ledger
from scheduler.preemption.models import Plan, PreemptionRequest, RequestState
from tests.gangweb.api.v1.conftest import HIDDEN

pytestmark = pytest.mark.django_db(transaction=True)


def detail(client, request_id: int, reader: dict) -> dict:
    answer = client.get(reverse("api:v1:request-detail", kwargs={"pk": request_id}), **reader)
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_a_team_reader_judges_a_decision_on_another_teams_victims_without_their_names(
    client, world, admin, a_viewer
):
    request = world.requests["team-a"]
    mine = detail(client, request.pk, a_viewer)
    decision = mine["decision"]
    assert decision["preemptor"]["podGroup"] == "team-a/train"
    assert decision["preemptor"]["priority"] == 100
    rule = decision["rule"]
    assert (rule["preemptorPriority"], rule["highestVictimPriority"], rule["lowerPriorityOnly"]) == (
        100,
        10,
        True,
    )
    [victim] = decision["victims"]
    assert victim["namespace"] is None and victim["name"] is None and victim["otherNamespace"] is True
    assert (victim["kind"], victim["priority"], victim["podCount"], victim["gpus"]) == ("PodGroup", 10, 2, 16)
    assert victim["runningSeconds"] > 0 and victim["lostGpuSeconds"] == pytest.approx(
        16 * victim["runningSeconds"]
    )
    assert victim["evictedPods"] == 2 and victim["evictions"] == {"evicted": 2}
    assert [s["step"] for s in decision["timeline"]] == [
        "detected",
        "planned",
        "evicting",
        "evicted",
        "placed",
    ]
    assert decision["timeline"][0]["detail"] == "test: pending for 45s"
    kinds = [e["kind"] for e in decision["ledger"]]
    assert kinds[0] == "request.opened" and "plan.created" in kinds and kinds[-1] == "request.succeeded"
    text = str(mine)
    assert not any(word in text for word in HIDDEN), text
    # the admin reads the same decision with the victims named
    [named] = detail(client, request.pk, admin)["decision"]["victims"]
    assert (named["namespace"], named["name"]) == ("batch", "low")
    assert {k: v for k, v in named.items() if k not in ("namespace", "name")} == {
        k: v for k, v in victim.items() if k not in ("namespace", "name", "otherNamespace")
    }


def test_a_victim_that_at_once_evicts_others_is_flagged_a_cascade_from_both_ends(client, world, admin):
    first = world.requests["team-a"]  # evicted batch/low
    now = timezone.now()
    second = PreemptionRequest.objects.create(
        namespace="batch",
        name="low",
        state=RequestState.SUCCEEDED,
        execution_started_at=now,
        finished_at=now,
    )
    Plan.objects.create(request=second, policy="gangweb", feasible=True, outcome="preempt", evicted_pods=6)
    cascade = detail(client, first.pk, admin)["decision"]["cascade"]
    assert [(c["request"], c["namespace"], c["name"], c["evictedPods"]) for c in cascade["caused"]] == [
        (second.pk, "batch", "low", 6)
    ]
    assert cascade["causedBy"] is None
    back = detail(client, second.pk, admin)["decision"]["cascade"]
    assert back["causedBy"]["request"] == first.pk and back["caused"] == []


def test_a_notices_deadline_is_said_in_utc_the_form_the_pages_show_in_the_readers_zone(client, world, admin):
    plan = Plan.objects.filter(request=world.requests["team-a"]).first()
    plan, given = ledger.give_notice(plan.pk, 300)
    assert given
    entries = detail(client, plan.request_id, admin)["decision"]["ledger"]
    [notice] = [e["message"] for e in entries if e["kind"] == "notice.given"]
    # words.js's timesIn makes "YYYY-MM-DD HH:MM:SS UTC" in server text a <time> in the reader's zone
    assert notice.endswith(f"at the latest at {plan.notice_deadline:%Y-%m-%d %H:%M:%S} UTC"), notice
    assert "+00:00" not in notice


def test_a_request_of_another_team_is_not_found(client, world, a_viewer):
    answer = client.get(
        reverse("api:v1:request-detail", kwargs={"pk": world.requests["team-b"].pk}), **a_viewer
    )
    assert answer.status_code == 404


def test_kube_schedulers_figures_are_shown_only_for_an_observed_gang_and_say_when_unread(
    client, world, admin, settings
):
    request = world.requests["team-a"]
    assert (
        detail(client, request.pk, admin)["decision"]["native"] is None
    )  # enforce mode: nothing to set beside
    PreemptionRequest.objects.filter(pk=request.pk).update(mode="observe")
    settings.GANGWEB_SCHEDULER_METRICS_URL = ""
    native = detail(client, request.pk, admin)["decision"]["native"]
    assert native["state"] == "missing" and "GANGWEB_SCHEDULER_METRICS_URL" in native["detail"]
    settings.GANGWEB_SCHEDULER_METRICS_URL = (
        "https://127.0.0.1:9/metrics"  # nothing listens on the discard port
    )
    native = detail(client, request.pk, admin)["decision"]["native"]
    assert native["state"] == "unavailable" and "127.0.0.1:9" in native["detail"]
    assert native["podGroup"]["preemptions"] == 0
