"""The checkpoint signal (scheduler/engine/checkpoints.py): what a workload reports, and what it loses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler.engine.checkpoints import (
    CHECKPOINT_ANNOTATION,
    assumed_checkpoint,
    last_checkpoint,
    lost_gpu_seconds,
    newest_checkpoint,
)

T0 = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)


def test_gangweb_annotation_is_read_as_an_aware_instant():
    got = last_checkpoint({CHECKPOINT_ANNOTATION: "2026-12-02T05:00:00Z"})
    assert got == T0
    assert last_checkpoint({CHECKPOINT_ANNOTATION: "2026-12-02T07:00:00+02:00"}) == T0


def test_volcano_convention_is_read_when_gangweb_reports_nothing():
    assert last_checkpoint({"volcano.sh/last-checkpoint-time": "2026-12-02T05:00:00Z"}) == T0


def test_gangweb_annotation_wins_over_other_conventions():
    annotations = {
        CHECKPOINT_ANNOTATION: "2026-12-02T05:00:00Z",
        "volcano.sh/last-checkpoint-time": "2026-12-02T05:30:00Z",
    }
    assert last_checkpoint(annotations) == T0


@pytest.mark.parametrize(
    "value", ["", "yesterday", "2026-12-02T05:00:00", "1764651600", "2026-13-02T05:00:00Z"]
)
def test_malformed_or_offsetless_value_is_no_report(value):
    assert last_checkpoint({CHECKPOINT_ANNOTATION: value}) is None


def test_malformed_gangweb_value_falls_back_to_the_next_convention():
    annotations = {CHECKPOINT_ANNOTATION: "soon", "volcano.sh/last-checkpoint-time": "2026-12-02T05:00:00Z"}
    assert last_checkpoint(annotations) == T0


def test_newest_of_pod_and_group_counts():
    pod = {CHECKPOINT_ANNOTATION: "2026-12-02T05:00:00Z"}
    group = {CHECKPOINT_ANNOTATION: "2026-12-02T05:10:00Z"}
    assert newest_checkpoint([pod, group, {}]) == (T0 + timedelta(minutes=10)).timestamp()
    assert newest_checkpoint([{}, {}]) is None


def test_lost_work_counts_from_the_later_of_start_and_checkpoint():
    start, now = T0, T0 + timedelta(hours=1)
    assert lost_gpu_seconds(8, start, None, now) == 8 * 3600
    assert lost_gpu_seconds(8, start, T0 + timedelta(minutes=50), now) == 8 * 600
    # A checkpoint from before the start (an earlier run's) counts from the start.
    assert lost_gpu_seconds(8, start, T0 - timedelta(hours=5), now) == 8 * 3600
    # One in the future (clock skew) loses nothing; nor does what never started.
    assert lost_gpu_seconds(8, start, now + timedelta(seconds=5), now) == 0
    assert lost_gpu_seconds(8, None, None, now) == 0
    # Seconds since the epoch and datetimes mix.
    assert lost_gpu_seconds(2, start.timestamp(), T0 + timedelta(minutes=30), now.timestamp()) == 2 * 1800


def test_default_interval_assumes_whole_intervals_since_start():
    start = T0.timestamp()
    assert assumed_checkpoint(start, 600, start + 1500) == start + 1200
    assert assumed_checkpoint(start, 600, start + 599) == start
    assert assumed_checkpoint(start, 0, start + 1500) is None
    assert assumed_checkpoint(None, 600, start) is None
