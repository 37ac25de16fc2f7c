"""The gangs list and a gang's page of the API name the queue a gang runs or waits in and why it waits
(``queue``, ``blocker``: docs/queues.md "Why a gang waits"), and ``?queue=SYSTEM/NAME`` keeps the gangs of
those queues: a gang Kueue holds for quota reads as a quota wait, never a capacity one."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler.engine.builders import pod, podgroup
from scheduler.preemption import runtime
from tests.scheduler.preemption.builders import FakeCluster
from tests.scheduler.queues.conftest import load_objects

pytestmark = pytest.mark.django_db(transaction=True)

QUOTA = "ClusterQueue team-b: needs 16 GPUs; 8 free under nominal 16; 8 lent to other queues"


@pytest.fixture
def kueue_cluster():
    """Kueue's fixture (team-b/train-b waits for quota in ClusterQueue team-b), and a gang of no queue that
    is too short of pods to start."""
    objects = load_objects("kueue")
    objects += [podgroup("short", namespace="free", min_count=3, priority=10)]
    objects += [pod("short-0", namespace="free", group="short", gpus=1)]
    runtime.set_cluster(FakeCluster(objects))
    yield
    runtime.reset_cluster()


def _rows(client, admin, **query):
    answer = client.get(reverse("api:v1:podgroups"), query, **admin)
    assert answer.status_code == 200, answer.content
    return {r["podGroup"]: r for r in answer.json()["results"]}


def test_the_gangs_list_says_the_queue_and_the_quota_wait(client, admin, kueue_cluster):
    rows = _rows(client, admin)
    waiting = rows["team-b/train-b"]
    assert waiting["queue"] == {"system": "kueue", "name": "team-b"}
    assert waiting["blocker"]["code"] == "quota" and waiting["blocker"]["reason"] == QUOTA
    assert waiting["blocker"]["numbers"]["needs"] == 16
    short = rows["free/short"]
    assert short["queue"] is None
    assert short["blocker"] == {
        "code": "quorum",
        "reason": "PodGroup free/short: 1 of minCount 3 pods exist",
        "numbers": {"pods": 1, "minCount": 3},
    }


def test_the_queue_filter_keeps_that_queues_gangs(client, admin, kueue_cluster):
    assert set(_rows(client, admin, queue="kueue/team-b")) == {"team-b/train-b"}
    assert set(_rows(client, admin, queue="kueue/team-a,volcano/team-b")) == set()
    assert "free/short" in _rows(client, admin)


def test_the_gang_page_says_why_it_waits(client, admin, kueue_cluster):
    answer = client.get(
        reverse("api:v1:podgroup-detail", kwargs={"namespace": "team-b", "name": "train-b"}), **admin
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["queue"] == {"system": "kueue", "name": "team-b"}
    assert body["blocker"]["code"] == "quota" and body["blocker"]["reason"] == QUOTA


def test_the_schema_has_the_queue_filter_and_fields(client, admin):
    text = client.get(reverse("api:schema"), **admin).content.decode()
    assert "SYSTEM/NAME" in text and "blocker" in text
