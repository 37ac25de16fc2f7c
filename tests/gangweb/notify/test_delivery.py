"""Notifications from the ledger to real local HTTP sinks (gangweb/notify/): the three shapes, the outbox
in the ledger row's transaction, tenant routes, and sinks that are down, slow, broken or redirecting."""

from __future__ import annotations

import json
import time

import pytest
from django.db import transaction

from gangweb.notify import config, tasks
from gangweb.notify.models import Attempt, Delivery, DeliveryState
from scheduler.preemption import ledger
from tests.conftest import free_port
from tests.gangweb.notify.sinks import Sink
from tests.scheduler.preemption.test_kube_events import drive_a_plan

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def notify_settings(settings):
    settings.GANGWEB_NOTIFY_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.GANGWEB_NOTIFY_TIMEOUT_SECONDS = 2.0
    settings.GANGWEB_NOTIFY_BACKOFF_SECONDS = 0.05
    settings.GANGWEB_NOTIFY_BACKOFF_MAX_SECONDS = 0.2
    settings.CELERY_TASK_ALWAYS_EAGER = True  # delivered on commit in this process; retries by the sweep


@pytest.fixture
def sinks():
    made: list[Sink] = []

    def make(**kwargs) -> Sink:
        made.append(Sink(**kwargs))
        return made[-1]

    yield make
    for sink in made:
        sink.close()


def sweep_until(predicate, timeout: float = 30.0):
    """Run the sweep (beat's task) until ``predicate()`` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tasks.sweep()
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError("the sweep never got there")


def test_each_kind_of_sink_gets_its_shape_with_one_id(sinks):
    ce, slack, am = sinks(), sinks(), sinks()
    config.add_sink("ce", kind="cloudevents", url=ce.url, all_namespaces=True)
    config.add_sink("chat", kind="slack", url=slack.url, all_namespaces=True)
    config.add_sink("am", kind="alertmanager", url=f"http://127.0.0.1:{am.port}/", all_namespaces=True)
    request, _ = ledger.open_request("team-a", "train", mode="enforce", trigger="no room for 8 GPUs")

    [cloud] = ce.wait_for(1)
    assert cloud["headers"]["Content-Type"] == "application/cloudevents+json"
    event = cloud["body"]
    assert event["specversion"] == "1.0" and event["type"] == "io.gangweb.request.opened"
    assert event["source"] == "gangweb.io/preemption" and event["subject"] == "team-a/train"
    assert event["data"]["request"] == request.pk and event["time"].endswith("Z")
    [chat] = slack.wait_for(1)
    assert chat["body"]["text"].startswith("gangweb: request.opened team-a/train")
    assert chat["body"]["text"].endswith(f"[{event['id']}]")
    [alerts] = am.wait_for(1)
    assert alerts["path"] == "/api/v2/alerts"
    [alert] = alerts["body"]
    assert alert["labels"] | {"event_id": event["id"]} == alert["labels"]
    assert alert["labels"]["alertname"] == "GangwebPreemption" and alert["labels"]["podgroup"] == "train"
    assert alert["startsAt"] < alert["endsAt"]
    rows = Delivery.objects.all()
    assert {(d.sink.name, d.state, d.attempts) for d in rows} == {
        (name, DeliveryState.DELIVERED, 1) for name in ("ce", "chat", "am")
    }
    assert {str(d.event_id) for d in rows} == {event["id"]}


def test_the_outbox_commits_and_rolls_back_with_the_ledger_row(sinks):
    ce = sinks()
    config.add_sink("ce", kind="cloudevents", url=ce.url, all_namespaces=True)
    with pytest.raises(RuntimeError), transaction.atomic():
        ledger.open_request("team-a", "gone", mode="enforce", trigger="rolled back")
        raise RuntimeError("the ledger write fails after its event was published")
    ledger.open_request("team-a", "kept", mode="enforce", trigger="committed")
    [kept] = ce.wait_for(1)
    assert kept["body"]["subject"] == "team-a/kept"
    assert list(Delivery.objects.values_list("payload__podGroup", flat=True)) == ["team-a/kept"]


def test_a_tenant_route_never_receives_another_namespaces_names(sinks):
    victims, teams, nobody, admin = sinks(), sinks(), sinks(), sinks()
    config.add_sink("batch", kind="cloudevents", url=victims.url, namespaces=["batch"])
    config.add_sink("team-a", kind="cloudevents", url=teams.url, namespaces=["team-a"])
    config.add_sink("team-c", kind="cloudevents", url=nobody.url, namespaces=["team-c"])
    config.add_sink("everyone", kind="cloudevents", url=admin.url, all_namespaces=True)
    drive_a_plan("team-a/train", {"batch/low": ["low-0", "low-1"]})
    everything = sweep_until(
        lambda: Delivery.objects.filter(sink__name="everyone", state="delivered").count()
    )
    assert everything
    total = Delivery.objects.filter(sink__name="everyone").count()
    all_bodies = admin.wait_for(total)
    assert any("batch/low-0" in json.dumps(b["body"]) for b in all_bodies)
    # batch hears that its pods were taken (plan, dry runs, evictions), never by whom.
    batch_count = Delivery.objects.filter(sink__name="batch").count()
    batch = [b["body"] for b in victims.wait_for(batch_count)]
    assert {b["type"] for b in batch} >= {"io.gangweb.plan.created", "io.gangweb.eviction"}
    assert all("team-a" not in json.dumps(b) and "train" not in json.dumps(b) for b in batch), batch
    assert any("batch/low-0" in json.dumps(b) for b in batch)
    # team-a hears about its gang, not which pods of batch went.
    team = [b["body"] for b in teams.wait_for(Delivery.objects.filter(sink__name="team-a").count())]
    assert all("batch" not in json.dumps(b) and "low-0" not in json.dumps(b) for b in team), team
    assert {b["type"] for b in team} >= {"io.gangweb.request.opened", "io.gangweb.gang.placed"}
    assert not Delivery.objects.filter(sink__name="team-c").exists() and nobody.received == []


def test_sinks_down_slow_broken_or_redirecting_lose_nothing_and_delay_no_other(sinks, settings):
    good, slow, broken, moved = (
        sinks(),
        sinks(delay=4.0, slow_calls=1),
        sinks(failures=2),
        sinks(answer="redirect"),
    )
    down_port = free_port()
    config.add_sink("good", kind="cloudevents", url=good.url, all_namespaces=True)
    config.add_sink("slow", kind="cloudevents", url=slow.url, all_namespaces=True)
    config.add_sink("broken", kind="slack", url=broken.url, all_namespaces=True)
    config.add_sink("moved", kind="cloudevents", url=moved.url, all_namespaces=True)
    config.add_sink("down", kind="alertmanager", url=f"http://127.0.0.1:{down_port}", all_namespaces=True)

    ledger.open_request("team-a", "train", mode="enforce", trigger="test")

    [first] = good.wait_for(1)
    slow_try = Attempt.objects.get(delivery__sink__name="slow")
    assert not slow_try.ok and "timed out" in slow_try.error.lower()
    # The good sink had its message before the slow one's try had even given up.
    assert first["at"] < slow_try.at.timestamp()
    down = Delivery.objects.get(sink__name="down")
    assert down.state == DeliveryState.PENDING and "refused" in down.last_error.lower()
    moved_row = Delivery.objects.get(sink__name="moved")
    assert moved_row.last_error == "redirect to http://elsewhere.example/hook not followed"

    # Retries with backoff: the broken sink's third try works, the slow one's second.
    sweep_until(
        lambda: Delivery.objects.filter(sink__name__in=("broken", "slow"), state="delivered").count() == 2
    )
    assert [a.status for a in Attempt.objects.filter(delivery__sink__name="broken").order_by("id")] == [
        500,
        500,
        202,
    ]
    # The slow sink got it twice (its first answer came after gangweb gave up): the same id, one event.
    bodies = slow.wait_for(2)
    assert len({b["body"]["id"] for b in bodies}) == 1 == len({first["body"]["id"], bodies[0]["body"]["id"]})

    # The down sink comes up: what waited is delivered, nothing was lost.
    up = Sink(port=down_port)
    try:
        sweep_until(lambda: Delivery.objects.get(sink__name="down").state == DeliveryState.DELIVERED)
        [alerts] = up.wait_for(1)
        assert alerts["body"][0]["labels"]["event_id"] == first["body"]["id"]
    finally:
        up.close()
    assert Delivery.objects.get(sink__name="down").attempts >= 2
    assert Delivery.objects.get(sink__name="moved").state == DeliveryState.PENDING  # never followed
