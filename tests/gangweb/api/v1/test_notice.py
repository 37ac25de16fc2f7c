"""A notice as the API serves it: on the request (list and detail), its plan, the preemptor's verdict and the
victim's row (its deadline annotation); lost work estimated and realised on each eviction; ``gang plan``'s
gang page reads the same."""

from __future__ import annotations

import pytest
from django.utils import timezone

from gangweb.dashboard import live
from scheduler.preemption.execution import NOTICE, execute
from scheduler.preemption.execution.notice import CHECKPOINT_ANNOTATION, DEADLINE_ANNOTATION, rfc3339
from tests.scheduler.preemption.test_budgets import FAST

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def noticed(make_request, settings):
    """team-a/train planned against small_cluster, its victims (batch/low) told and waiting."""
    settings.GANGWEB_PREEMPTION_NOTICE_SECONDS = 300
    made = make_request("team-a", execute_it=False)
    assert execute(made.request.pk, made.cluster, retry=FAST).state == NOTICE
    made.plan.refresh_from_db()
    live.reset()
    yield made
    live.reset()


def test_the_notice_is_on_the_request_its_plan_and_both_gangs(client, admin, noticed):
    plan = noticed.plan
    deadline = plan.notice_deadline.isoformat().replace("+00:00", "Z")
    expected = {"plan": plan.pk, "deadline": deadline, "withdrawnAt": None}

    def notice(body):
        return {k: v for k, v in (body["notice"] or {}).items() if k != "givenAt"}

    [row] = client.get("/api/v1/requests/", **admin).json()["results"]
    assert notice(row) == expected
    assert notice(client.get(f"/api/v1/requests/{noticed.request.pk}/", **admin).json()) == expected
    assert notice(client.get(f"/api/v1/plans/{plan.pk}/", **admin).json()) == expected
    preemptor = client.get("/api/v1/podgroups/team-a/train/", **admin).json()
    assert notice(preemptor["verdict"]) == expected and preemptor["noticeDeadline"] is None
    victim = client.get("/api/v1/podgroups/batch/low/", **admin).json()
    annotations = noticed.cluster.objects[("PodGroup", "batch/low")]["metadata"]["annotations"]
    assert victim["noticeDeadline"] == annotations[DEADLINE_ANNOTATION]
    assert victim["noticeDeadline"].startswith(deadline[:19])


def test_each_eviction_says_what_was_estimated_and_what_was_really_lost(client, admin, make_request):
    made = make_request("team-a")
    rows = client.get("/api/v1/evictions/", **admin).json()["results"]
    assert rows and all(r["state"] == "evicted" for r in rows)
    for r in rows:
        # the victims started at builders.T0: GPUs x the time since then, at the moment of the eviction
        assert r["workSince"].startswith("2026-11-30T08:00:00")
        assert r["lostGpuSeconds"] > 8 * 86_400
        assert "estimatedLostGpuSeconds" in r
    card = client.get("/api/v1/preemptions/", **admin).json()["results"][0]["runs"][0]["plan"]
    assert card["realisedLostGpuHours"] == round(sum(r["lostGpuSeconds"] for r in rows) / 3600, 2)
    assert card["estimatedLostGpuHours"] == round(made.plan.lost_gpu_seconds / 3600, 2)
    assert card["noticeDeadline"] is None


def test_once_its_pods_are_evicted_the_victim_shows_no_notice(client, admin, noticed):
    """batch/low saves after the notice and is evicted: its row's deadline goes, its condition says so."""
    victim = noticed.cluster.objects[("PodGroup", "batch/low")]
    victim["metadata"]["annotations"][CHECKPOINT_ANNOTATION] = rfc3339(timezone.now())
    assert execute(noticed.request.pk, noticed.cluster, retry=FAST).state == "succeeded"
    assert client.get("/api/v1/podgroups/batch/low/", **admin).json()["noticeDeadline"] is None
    told = [c[2:] for c in noticed.cluster.podgroup_conditions if c[:2] == ("batch/low", "DisruptionTarget")]
    assert told == [("True", "PreemptionNotice"), ("False", "PreemptionCompleted")]
