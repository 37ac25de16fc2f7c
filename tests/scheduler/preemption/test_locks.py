"""Node locks on real Redis: exclusive, sorted, expiring, released on failure."""

from __future__ import annotations

import threading
import time

import pytest

from scheduler.preemption import locks


@pytest.fixture(autouse=True)
def redis_locks(redis_url, settings):
    settings.REDIS_URL = redis_url
    settings.GANGWEB_LOCK_TTL_SECONDS = 1


def test_second_holder_waits_then_gives_up():
    keys = [locks.node_key("node-a"), locks.node_key("node-b")]
    with (
        locks.hold(keys),
        pytest.raises(locks.LockBusy) as busy,
        locks.hold([locks.node_key("node-b")], wait=0.3),
    ):
        pass
    assert "node:node-b" in str(busy.value)
    with locks.hold([locks.node_key("node-b")], wait=0.3):  # free again after release
        pass


def test_locks_are_released_when_the_body_fails():
    key = locks.node_key("node-fail")
    with pytest.raises(RuntimeError), locks.hold([key]):
        raise RuntimeError("eviction blew up")
    assert not locks.is_locked(key)


def test_heartbeat_keeps_a_long_execution_locked_past_the_ttl():
    """Four refreshes, a third of the TTL apart, carry the lock past its TTL; each succeeds only on a key
    still ours, so a lock that lapsed in between would have lost the lease."""
    key = locks.node_key("node-slow")
    ttl = 2.0
    with locks.hold([key], ttl=ttl) as lease:
        taken = time.monotonic()
        assert lease.wait_refreshes(4, timeout=60), lease.lost or "the heartbeat never refreshed"
        assert time.monotonic() - taken > ttl
        assert not lease.lost and locks.is_locked(key)
    assert not locks.is_locked(key)


def test_a_dead_holders_lock_expires():
    key = locks.node_key("node-dead")
    store = locks._store()
    store.acquire(key, "killed-worker", 500)  # what a SIGKILLed worker leaves behind
    with pytest.raises(locks.LockBusy), locks.hold([key], wait=0.1):
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

    threads = [
        threading.Thread(target=worker, args=([a, b],)),
        threading.Thread(target=worker, args=([b, a],)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(done) == 2


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_lease_refuses_a_call_that_could_outlive_the_lock():
    clock = FakeClock()
    lease = locks.Lease(30, since=clock.now, clock=clock)
    lease.check(margin=20)  # 30 s left: a 20 s call ends before the key can expire
    clock.now += 10.5
    with pytest.raises(locks.LockLost, match=r"less than the 20\.0 s"):
        lease.check(margin=20)  # 19.5 s left
    lease.refreshed(clock.now)
    lease.check(margin=20)
    clock.now += 30
    with pytest.raises(locks.LockLost, match="not refreshed within the lock TTL"):
        lease.check()
    assert lease.stopping.is_set()


def test_a_stopped_lease_refuses_every_later_call():
    lease = locks.Lease(30)
    lease.stop("execution interrupted: SoftTimeLimitExceeded")
    with pytest.raises(locks.Stopped, match="SoftTimeLimitExceeded"):
        lease.check()
    assert lease.stopping.is_set()


def test_a_lock_gone_from_redis_is_lost_at_the_next_refresh(redis_url):
    """What a Redis restart does: the key vanishes while its holder still works."""
    import redis

    key = locks.node_key("node-restart")
    with locks.hold(
        [key], ttl=3.0
    ) as lease:  # refreshed each second: the deletion is seen long before expiry
        lease.check()
        redis.Redis.from_url(redis_url).delete(key)
        assert lease.stopping.wait(10), "the heartbeat must notice the lost key"
        with pytest.raises(locks.LockLost, match="gone"):
            lease.check()


def test_a_holder_that_cannot_refresh_stops_before_the_ttl_runs_out(monkeypatch):
    """Redis unreachable: refreshes raise. The lease runs down from the last good refresh and refuses
    calls that could outlast it, while the key still exists."""
    key = locks.node_key("node-unreachable")
    store = locks._store()

    def unreachable(*args, **kwargs):
        raise ConnectionError("Redis unreachable")

    with locks.hold([key], ttl=1.2) as lease:
        monkeypatch.setattr(type(store), "refresh", unreachable)
        assert lease.stopping.wait(10), "the lease must run out without refreshes"
        with pytest.raises(locks.LockLost):
            lease.check()
        monkeypatch.undo()
