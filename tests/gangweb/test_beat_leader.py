"""Two real `celery beat` processes on one Redis (deploy/ runs two): only the lock holder sends the periodic
tasks, and when it is killed outright the other one takes over within seconds (gangweb/beat.py).

Who sent a task is read from the message itself: Celery stamps each with its sender's ``origin``
(``gen<pid>@<host>``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import redis

from gangweb.beat import KEY
from tests.conftest import ROOT
from tests.scheduler.preemption.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LOCK_SECONDS = 3
TASK = "scheduler.detect_unschedulable_gangs"


def start_beat(broker: str, tmp_path, name: str) -> tuple[subprocess.Popen, object]:
    env = {
        **os.environ,
        "REDIS_URL": broker,
        "SECRET_KEY": "beat-leader-test",
        "GANGWEB_DEMO": "0",
        "GANGWEB_BEAT_LOCK_SECONDS": str(LOCK_SECONDS),
        "GANGWEB_DETECT_INTERVAL_SECONDS": "1",
    }
    log = open(tmp_path / f"{name}.log", "ab")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "gangweb", "beat"]
        + ["--schedule", str(tmp_path / f"{name}-schedule"), "--loglevel=INFO"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return proc, log


def senders(client: redis.Redis) -> list[int]:
    """The pid of each process that queued the detection task, in queue order."""
    found = []
    for raw in reversed(client.lrange("celery", 0, -1)):  # LPUSHed: newest first
        headers = json.loads(raw)["headers"]
        if headers["task"] == TASK:
            found.append(int(headers["origin"].removeprefix("gen").partition("@")[0]))
    return found


def test_the_other_beat_sends_within_seconds_of_the_holder_being_killed(broker, tmp_path):
    client = redis.Redis.from_url(broker)
    beats = [start_beat(broker, tmp_path, name) for name in ("a", "b")]
    logs = tmp_path / "a.log"
    try:
        pids = {proc.pid for proc, _ in beats}
        token = wait_until(lambda: client.get(KEY), 60, "a beat to take the lock", logs).decode()
        leader = int(token.split(":")[1])
        assert leader in pids
        (standby,) = pids - {leader}

        wait_until(lambda: senders(client).count(leader) >= 3, 60, "three sends by the holder", logs)
        assert set(senders(client)) == {leader}  # the standby ran all along and sent nothing

        os.killpg(leader, signal.SIGKILL)
        killed_at = time.monotonic()
        wait_until(lambda: standby in senders(client), 60, "the other beat to send", tmp_path / "b.log")
        took = time.monotonic() - killed_at
        assert client.get(KEY).decode().split(":")[1] == str(standby)
        # the lock's TTL and one tick: well under the minutes a node takes to be declared lost
        assert took < LOCK_SECONDS + 10, took
        wait_until(lambda: senders(client).count(standby) >= 3, 60, "the new holder to keep sending", logs)
    finally:
        for proc, log in beats:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
            log.close()


def test_a_beat_that_stops_cleanly_hands_the_lock_over_at_once(broker, tmp_path):
    client = redis.Redis.from_url(broker)
    proc, log = start_beat(broker, tmp_path, "only")
    try:
        wait_until(lambda: client.get(KEY), 60, "the beat to take the lock", tmp_path / "only.log")
        proc.terminate()
        proc.wait(timeout=30)
        assert client.get(KEY) is None  # given back, not left to expire
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()
