"""The dashboard's ledger views (gangweb/api/v1/queries/preemptions.py, gangweb/dashboard/overview.py):
preemption cards with retries folded, headline figures, the bounded chart history; each cut to the reader's
scope."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from gangweb.access.scope import ADMIN, VIEWER, Scope
from gangweb.api.v1.queries import preemptions
from gangweb.dashboard import history, overview
from gangweb.dashboard.models import GpuSample
from scheduler.preemption.models import Plan, PreemptionRequest, RequestState

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("small_simulation")]
EVERYONE = Scope(user="root", everywhere=ADMIN)


def infeasible(namespace: str, name: str, count: int, reason: str = "short of minCount 4") -> list:
    made = []
    for i in range(count):
        request = PreemptionRequest.objects.create(
            namespace=namespace,
            name=name,
            state=RequestState.INFEASIBLE,
            reason=f"{reason} ({20 + i} victims)",
            finished_at=timezone.now(),  # a finished try: the verdict's retry time counts from it
        )
        Plan.objects.create(
            request=request, policy="gangweb", outcome="infeasible:short", reason=request.reason
        )
        made.append(request)
    return made


def test_retries_that_ended_alike_fold_into_one_run_and_executions_come_first(make_request):
    done = make_request("team-a")
    infeasible("team-b", "big", 7)
    cards = preemptions.cards(EVERYONE)
    assert [c["podGroup"] for c in cards] == ["team-a/train", "team-b/big"]
    executed, retried = cards
    assert executed["executed"] == 1 and executed["runs"][0]["executed"]
    plan = executed["runs"][0]["plan"]
    pods, units = done.plan.evicted_pods, done.plan.victim_units
    assert plan["summary"].startswith(f"evicted {pods} pod{'s' if pods != 1 else ''} in {units} unit")
    [run] = retried["runs"]
    assert (run["state"], run["count"]) == ("infeasible", 7)
    assert run["reason"].endswith("(26 victims)"), "the latest try's reason"
    assert retried["retryAt"] is not None


def test_a_different_outcome_starts_a_new_run():
    first = infeasible("team-b", "big", 2)
    other = PreemptionRequest.objects.create(
        namespace="team-b", name="big", state=RequestState.FAILED, reason="429"
    )
    infeasible("team-b", "big", 1)
    [card] = preemptions.cards(EVERYONE)
    assert [(r["state"], r["count"]) for r in card["runs"]] == [
        ("infeasible", 1),
        ("failed", 1),
        ("infeasible", 2),
    ]
    assert card["runs"][-1]["firstRequest"] == first[0].pk and card["runs"][1]["firstRequest"] == other.pk


def test_cards_are_cut_to_the_scope_and_filtered(make_request):
    make_request("team-a")
    infeasible("team-b", "big", 3)
    team_b = Scope(user="bob", per_namespace={"team-b": VIEWER})
    assert [c["podGroup"] for c in preemptions.cards(team_b)] == ["team-b/big"]
    assert len(preemptions.cards(EVERYONE, states=["succeeded"])) == 1
    assert len(preemptions.cards(EVERYONE, gang="BI")) == 1, "the name contains it, in any case"
    assert len(preemptions.cards(EVERYONE, namespaces=["team-a", "team-c"])) == 1


def test_headline_figures_count_executions_and_lost_gpu_hours(make_request):
    done = make_request("team-a")
    infeasible("team-b", "big", 2)
    figures = overview.preemption_figures(EVERYONE)
    assert figures["hour"]["preemptions"] == figures["day"]["preemptions"] == 1
    assert figures["day"]["lostGpuHours"] == round(done.plan.lost_gpu_seconds / 3600, 1)
    assert (
        overview.preemption_figures(Scope(user="b", per_namespace={"team-b": VIEWER}))["day"]["preemptions"]
        == 0
    )
    PreemptionRequest.objects.filter(pk=done.request.pk).update(
        finished_at=timezone.now() - timedelta(hours=3)
    )
    figures = overview.preemption_figures(EVERYONE)
    assert (figures["hour"]["preemptions"], figures["day"]["preemptions"]) == (0, 1)


def test_the_chart_history_is_sampled_and_kept_to_its_bound(settings):
    settings.GANGWEB_HISTORY_KEEP = 5
    picture = {
        "nodes": [{"gpus": [0, None], "cordoned": False, "ready": True}],
        "gangs": [{"namespace": "team-a", "state": "running", "minCount": 1, "placed": 1, "podGpus": 1}],
        "totals": {"gpus": 2, "allocatedGpus": 1, "freeGpus": 1, "waitingGpus": 0, "waitingGangs": 0},
    }
    for _ in range(8):
        history.maybe_sample(picture, force=True)
    assert GpuSample.objects.count() == 5
    series = history.series(EVERYONE)
    assert series["allocated"] == [1] * 5 and series["idle"] == [1] * 5
    assert history.series(Scope(user="b", per_namespace={"team-b": VIEWER}))["allocated"] == [0] * 5
