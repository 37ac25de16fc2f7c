"""Decisions reach the dashboard in batches without ever blocking an answer; policy comes from settings."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from admission.handler import MUTATE, VALIDATE, Webhook
from admission.metrics import REGISTRY
from admission.policy import AdmissionPolicy
from admission.recorder import EVENT_TYPE, DecisionRecorder
from scheduler.publishing import PublishRefused, Seam
from tests.admission.support import load_pod, review_bytes


def seam(publish):
    """A seam of admission decisions with ``publish`` connected."""
    return Seam("admission decisions", publish)


def dropped(reason: str) -> float:
    return REGISTRY.get_sample_value("gangweb_admission_events_dropped_total", {"reason": reason}) or 0.0


def test_patched_pods_and_denials_are_published_as_one_batch():
    published = []
    recorder = DecisionRecorder(seam(lambda kind, payload: published.append((kind, payload))), interval=3600)
    webhook = Webhook(AdmissionPolicy(), recorder=recorder)
    webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid="a"))
    webhook.handle(MUTATE, review_bytes(load_pod("deployment-pod.yaml"), uid="untouched"))
    pod = load_pod("lws-worker.yaml")
    pod["metadata"]["annotations"]["gangweb.io/min-count"] = "9"
    webhook.handle(VALIDATE, review_bytes(pod, uid="b"))
    recorder.flush()
    [(kind, payload)] = published
    assert kind == EVENT_TYPE == "admission.decisions"
    assert payload["count"] == 2 and payload["dropped"] == 0
    first, second = payload["decisions"]
    assert (first["uid"], first["podGroup"], first["source"], first["allowed"]) == (
        "a",
        "resnet-train",
        "job",
        True,
    )
    assert first["namespace"] == "ml-team" and first["mode"] == "enforce"
    assert (second["uid"], second["allowed"]) == ("b", False) and "min-count" in second["message"]


def test_a_busy_interval_publishes_its_newest_decisions_and_counts_them_all():
    published = []
    recorder = DecisionRecorder(
        seam(lambda kind, payload: published.append(payload)), interval=3600, max_batch=3
    )
    webhook = Webhook(AdmissionPolicy(), recorder=recorder)
    for n in range(5):
        webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid=str(n)))
    recorder.flush()
    [payload] = published
    assert payload["count"] == 5 and payload["dropped"] == 0
    assert [decision["uid"] for decision in payload["decisions"]] == ["2", "3", "4"]


def test_answers_never_wait_for_a_slow_channel_layer():
    entered, release = threading.Event(), threading.Event()

    def slow(kind, payload):
        entered.set()
        release.wait(10)

    recorder = DecisionRecorder(seam(slow), interval=0.01, max_batch=3)
    webhook = Webhook(AdmissionPolicy(), recorder=recorder)
    webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid="first"))
    assert entered.wait(5)  # the publishing thread is now stuck in the channel layer
    try:
        answers = [
            webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid=str(n))) for n in range(50)
        ]
        assert {answer.status for answer in answers} == {200}
        assert recorder.offered == 51
    finally:
        release.set()
    assert recorder.wait_idle(5)


def test_failing_channel_layer_is_counted_and_the_answer_still_comes():
    def broken(kind, payload):
        raise ConnectionError("redis down")

    recorder = DecisionRecorder(seam(broken), interval=0.05)
    webhook = Webhook(AdmissionPolicy(), recorder=recorder)
    before = dropped("publish_failed")
    answer = webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml")))
    assert answer.status == 200
    assert recorder.wait_idle(5)
    assert dropped("publish_failed") == before + 1


def test_decisions_lost_in_an_outage_are_reported_with_the_next_event():
    published, failing = [], [True]

    def flaky(kind, payload):
        if failing[0]:
            raise ConnectionError("redis down")
        published.append(payload)

    recorder = DecisionRecorder(seam(flaky), interval=3600)
    webhook = Webhook(AdmissionPolicy(), recorder=recorder)
    for n in range(2):
        webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid=str(n)))
    recorder.flush()
    failing[0] = False
    webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid="after"))
    recorder.flush()
    [payload] = published
    assert (payload["count"], payload["dropped"]) == (1, 2)
    assert [decision["uid"] for decision in payload["decisions"]] == ["after"]


def test_gangweb_hands_the_webhook_its_publisher_at_startup():
    """gangweb's AppConfig.ready() connects the dashboard's send (keeping the decisions for the API on the
    way) to the webhook's seam; admission never imports gangweb itself."""
    from admission import runtime
    from gangweb.api.v1 import store
    from scheduler import publishing

    runtime.get_webhook.cache_clear()
    try:
        assert runtime.get_webhook().recorder._seam is publishing.DECISIONS
    finally:
        runtime.get_webhook.cache_clear()
    assert publishing.DECISIONS.publisher is store.keep_and_send


def test_background_thread_publishes_through_the_publisher_connected_after_it_was_built():
    seen, later = threading.Event(), seam(None)
    recorder = DecisionRecorder(later, interval=0.05)
    later.connect(lambda kind, payload: seen.set())
    Webhook(AdmissionPolicy(), recorder=recorder).handle(MUTATE, review_bytes(load_pod("job-parallel.yaml")))
    assert seen.wait(5)


def test_no_publisher_connected_counts_the_decisions_lost():
    recorder = DecisionRecorder(seam(None), interval=3600)
    before = dropped("publish_failed")
    Webhook(AdmissionPolicy(), recorder=recorder).handle(MUTATE, review_bytes(load_pod("job-parallel.yaml")))
    recorder.flush()
    assert dropped("publish_failed") == before + 1


class _Log:
    """The live stream's topic log (``gangweb.stream``) with its Redis down (``broken``) or up."""

    def __init__(self):
        self.broken, self.sent = True, []

    def append_many(self, batches):
        if self.broken:
            raise ConnectionRefusedError("[Errno 111] Connect call failed ('127.0.0.1', 6379)")
        self.sent.append(batches)
        return {topic: 1 for topic in batches}


def test_an_outage_logs_one_warning_when_it_starts_and_one_when_it_ends(monkeypatch, caplog):
    """Through the real ``gangweb.events.send``, the publisher gangweb hands in: a refused send raises
    ``PublishFailed``, which the recorder counts without a traceback (it once logged one every 0.5 s for as
    long as Redis was down)."""
    from gangweb.events import send

    layer = _Log()
    monkeypatch.setattr("gangweb.stream.append_many", layer.append_many)
    recorder = DecisionRecorder(seam(send), interval=3600)
    webhook = Webhook(AdmissionPolicy(), recorder=recorder)
    caplog.set_level(logging.DEBUG)
    before = dropped("publish_failed")
    for n in range(6):  # six flushes of the background thread, three seconds of outage
        webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid=f"down-{n}"))
        recorder.flush()
    assert dropped("publish_failed") == before + 6
    [started] = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert started.name == "scheduler.publishing" and not started.exc_info  # no traceback
    assert (
        "not reaching the dashboard" in started.getMessage()
        and "ConnectionRefusedError" in started.getMessage()
    )

    caplog.clear()
    layer.broken = False
    webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml"), uid="up"))
    recorder.flush()
    recorder.flush()
    [ended] = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert (
        "admission decisions reach the dashboard again" in ended.getMessage()
        and "6 were dropped" in ended.getMessage()
    )
    [batch] = layer.sent
    [message] = batch["decisions"]  # in its topic, as gangweb.events numbers and keeps it
    assert message["payload"]["dropped"] == 6 and message["payload"]["decisions"][0]["uid"] == "up"


def test_other_senders_keep_their_warnings(monkeypatch, caplog):
    """Only the recorder's own sends are kept from the log: the pipeline's failed events still warn."""
    from gangweb import events

    log = _Log()
    monkeypatch.setattr("gangweb.stream.append_many", log.append_many)
    monkeypatch.setattr(events, "_outage", events._Outage())  # a fresh outage: its first warning
    caplog.set_level(logging.WARNING)
    events.publish("preemption.planned", {"id": 1})
    deadline = time.monotonic() + 10
    while not caplog.records and time.monotonic() < deadline:
        time.sleep(0.02)
    log.broken = False  # back: what was held is sent
    assert events.flush(30)
    assert {record.name for record in caplog.records} == {"gangweb.events"}
    assert "not reaching the dashboard" in caplog.records[0].getMessage()
    assert log.sent


def test_the_webhook_takes_its_modes_from_the_pipelines_one_decision(settings):
    from admission import runtime as admission_runtime
    from scheduler.preemption import runtime

    settings.GANGWEB_MODE = "observe"
    settings.GANGWEB_NAMESPACE_MODES = {"ml-team": "enforce"}
    settings.GANGWEB_NAMESPACE = "platform"
    admission_runtime.get_webhook.cache_clear()
    try:
        policy = admission_runtime.get_webhook().policy
    finally:
        admission_runtime.get_webhook.cache_clear()
    assert policy.mode_for is runtime.mode_for
    assert (policy.mode_for("ml-team"), policy.mode_for("other")) == ("enforce", "observe")
    assert policy.skips("platform") and policy.skips("kube-system") and not policy.skips("ml-team")


def test_bad_disruption_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="disruption mode must be one of all, single, got 'sometimes'"):
        AdmissionPolicy(default_disruption_mode="sometimes")


@pytest.mark.parametrize(
    "error, traceback", [(PublishRefused("layer down"), False), (ConnectionError("a bug"), True)]
)
def test_a_refused_publish_is_an_outage_and_anything_else_a_bug(caplog, error, traceback):
    """The publisher says the send was refused by raising ``PublishRefused``; any other exception is a
    bug, logged with its traceback (the seam's one rule, scheduler/publishing.py)."""

    def publish(kind, payload):
        raise error

    recorder = DecisionRecorder(seam(publish), interval=3600)
    webhook = Webhook(AdmissionPolicy(), recorder=recorder)
    with caplog.at_level(logging.WARNING, logger="scheduler.publishing"):
        webhook.handle(MUTATE, review_bytes(load_pod("job-parallel.yaml")))
        recorder.flush()
    [started] = [r for r in caplog.records if "not reaching the dashboard" in r.getMessage()]
    assert bool(started.exc_info) is traceback
