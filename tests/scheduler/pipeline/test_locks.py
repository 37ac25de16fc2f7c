"""Node locks on real Redis: exclusive, sorted, expiring, released on failure."""

from __future__ import annotations

import threading
import time

import pytest

from scheduler import locks


@pytest.fixture(autouse=True)
def redis_locks(redis_url, settings):
    settings.REDIS_URL = redis_url
    settings.GANGWEB_LOCK_TTL_SECONDS = 1


def test_second_holder_waits_then_gives_up():
    keys = [locks.node_key("node-a"), locks.node_key("node-b")]
    with locks.hold(keys):
        with pytest.raises(locks.LockBusy) as busy:
            with locks.hold([locks.node_key("node-b")], wait=0.3):
                pass
    assert "node:node-b" in str(busy.value)
    with locks.hold([locks.node_key("node-b")], wait=0.3):  # free again after release
        pass


def test_locks_are_released_when_the_body_fails():
    key = locks.node_key("node-fail")
    with pytest.raises(RuntimeError):
        with locks.hold([key]):
            raise RuntimeError("eviction blew up")
    assert not locks.is_locked(key)


def test_heartbeat_keeps_a_long_execution_locked_past_the_ttl():
    key = locks.node_key("node-slow")
    with locks.hold([key], ttl=0.6):
        time.sleep(1.5)
        assert locks.is_locked(key)
    assert not locks.is_locked(key)


def test_a_dead_holders_lock_expires():
    key = locks.node_key("node-dead")
    store = locks._store()
    store.acquire(key, "killed-worker", 500)  # what a SIGKILLed worker leaves behind
    with pytest.raises(locks.LockBusy):
        with locks.hold([key], wait=0.1):
            pass
    with locks.hold([key], wait=2.0):
        assert locks.is_locked(key)


def test_opposite_orders_do_not_deadlock():
    a, b = locks.node_key("node-x"), locks.node_key("node-y")
    done = []

    def worker(order):
        for _ in range(20):
            with locks.hold(order, wait=10):
                time.sleep(0.005)
        done.append(order)

    threads = [threading.Thread(target=worker, args=([a, b],)), threading.Thread(target=worker, args=([b, a],))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(done) == 2
