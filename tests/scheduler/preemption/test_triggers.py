"""The watch trigger: a PodGroup turning Unschedulable enqueues a detection pass for that gang, once per
transition; with Celery eager (no broker) it enqueues nothing, since the pass would run on the watch's
own thread and wait there for the watch it holds up."""

from __future__ import annotations

import pytest

from scheduler.preemption import tasks, triggers
from tests.scheduler.preemption.builders import podgroup


@pytest.fixture
def enqueued(monkeypatch):
    calls: list[dict] = []
    monkeypatch.setattr(tasks.detect_unschedulable_gangs, "apply_async", lambda **kw: calls.append(kw))
    monkeypatch.setattr(triggers, "_seen", {})
    return calls


def test_a_gang_turning_unschedulable_enqueues_its_detection_once_per_transition(enqueued, settings):
    settings.CELERY_TASK_ALWAYS_EAGER, settings.REDIS_URL = False, ""
    stuck = podgroup("team-a", "train", min_count=4, priority=1000, unschedulable=True)
    triggers.on_event("MODIFIED", None, stuck)
    triggers.on_event("MODIFIED", None, stuck)  # the same transition seen again
    assert enqueued == [{"kwargs": {"podgroup": "team-a/train"}}]
    triggers.on_event("MODIFIED", None, podgroup("team-a", "ok", min_count=1, priority=1))
    assert len(enqueued) == 1


def test_with_celery_eager_the_watch_thread_runs_no_pass(enqueued, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    triggers.on_event(
        "ADDED", None, podgroup("team-a", "train", min_count=4, priority=1000, unschedulable=True)
    )
    assert enqueued == []


def test_with_redis_each_transition_is_enqueued_once_by_all_processes(enqueued, settings, broker):
    settings.CELERY_TASK_ALWAYS_EAGER, settings.REDIS_URL = False, broker
    stuck = podgroup("team-a", "train", min_count=4, priority=1000, unschedulable=True)
    for _ in range(3):  # three processes watching: each sees the event, one claim wins
        triggers._seen.clear()
        triggers.on_event("MODIFIED", None, stuck)
    assert enqueued == [{"kwargs": {"podgroup": "team-a/train"}}]
    stuck["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-02T10:00:00Z"
    triggers.on_event("MODIFIED", None, stuck)
    assert len(enqueued) == 2


def test_with_redis_down_the_event_enqueues_nothing_and_the_beat_stays(enqueued, settings, caplog):
    settings.CELERY_TASK_ALWAYS_EAGER, settings.REDIS_URL = False, "redis://127.0.0.1:1/0"
    triggers.on_event(
        "MODIFIED", None, podgroup("team-a", "train", min_count=4, priority=1000, unschedulable=True)
    )
    assert enqueued == []
    assert "could not enqueue detection for team-a/train" in caplog.text
