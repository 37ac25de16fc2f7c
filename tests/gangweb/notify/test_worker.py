"""Notifications through a real Celery worker: the outbox row committed here, the delivery task run by
the worker, failed tries retried by the task itself with a doubling backoff (no sweep)."""

from __future__ import annotations

import os
from itertools import pairwise

import pytest

from gangweb.celery import app
from gangweb.notify import config
from gangweb.notify.models import Attempt, Delivery, DeliveryState
from scheduler.preemption import ledger
from tests.conftest import free_port
from tests.gangweb.notify.sinks import Sink
from tests.scheduler.preemption.workers import Worker, postgres_url_for_test_db, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

BACKOFF = 0.3


@pytest.fixture
def worker(broker, tmp_path, settings):
    settings.GANGWEB_NOTIFY_ALLOWED_HOSTS = ["127.0.0.1"]
    env = {
        **os.environ,
        "DATABASE_URL": postgres_url_for_test_db(),
        "REDIS_URL": broker,
        "SECRET_KEY": "notify-test",
        "GANGWEB_DEMO": "0",
        "GANGWEB_NOTIFY_ALLOWED_HOSTS": "127.0.0.1",
        "GANGWEB_NOTIFY_TIMEOUT_SECONDS": "2",
        "GANGWEB_NOTIFY_BACKOFF_SECONDS": str(BACKOFF),
    }
    # This process sends its tasks to the worker's broker.
    saved = app.conf.broker_write_url
    app.conf.broker_write_url = broker
    app._pool = None
    app.amqp._producer_pool = None
    log = tmp_path / "worker.log"
    started = Worker(env, log, concurrency=2).start()
    yield log
    started.stop()
    app.conf.broker_write_url = saved
    app._pool = None
    app.amqp._producer_pool = None


def test_a_worker_delivers_and_retries_with_backoff_each_sink_on_its_own(worker):
    good, broken = Sink(), Sink(failures=3)
    down = free_port()
    try:
        config.add_sink("good", kind="cloudevents", url=good.url, all_namespaces=True)
        config.add_sink("broken", kind="cloudevents", url=broken.url, all_namespaces=True)
        config.add_sink("down", kind="slack", url=f"http://127.0.0.1:{down}/hook", all_namespaces=True)
        ledger.open_request("team-a", "train", mode="enforce", trigger="test")

        [arrived] = good.wait_for(1, timeout=60)
        wait_until(
            lambda: Delivery.objects.filter(sink__name="broken", state=DeliveryState.DELIVERED).exists(),
            60,
            "the broken sink's fourth try",
            worker,
        )
        tries = list(Attempt.objects.filter(delivery__sink__name="broken").order_by("id"))
        assert [t.status for t in tries] == [500, 500, 500, 202]
        gaps = [(b.at - a.at).total_seconds() for a, b in pairwise(tries)]
        # Each pause at least the backoff, doubling (1x, 2x, 4x), minus the try's own time.
        assert all(gap >= BACKOFF * 2**i - 0.05 for i, gap in enumerate(gaps)), gaps
        assert [b["body"]["id"] for b in broken.wait_for(1)] == [arrived["body"]["id"]]
        # The sink that is down keeps being tried, and holds the message until it answers.
        wait_until(
            lambda: Delivery.objects.get(sink__name="down").attempts >= 3,
            60,
            "three tries of the down sink",
            worker,
        )
        assert Delivery.objects.get(sink__name="down").state == DeliveryState.PENDING
        up = Sink(port=down)
        try:
            [text] = up.wait_for(1, timeout=60)
            assert text["body"]["text"].endswith(f"[{arrived['body']['id']}]")
        finally:
            up.close()
    finally:
        good.close()
        broken.close()
