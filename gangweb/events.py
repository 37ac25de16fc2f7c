"""Live events for browsers: one function to publish; each event goes to its topic's feed.

Every event is numbered in its topic, kept a while and sent on the topic's feed in one step
(``gangweb/stream.py``), so a browser that reconnects resumes where it was; each server
process follows the feed (``gangweb/dashboard/hub.py``). What a process publishes while its previous
batch is on its way leaves together, in order (``_Batcher``).

Events are sent only after the surrounding database transaction commits, so a browser never sees
a plan or an eviction that was rolled back. Publishing never raises: the dashboard is a view of
the system, and Redis being down must not fail an eviction, an approval or an admission answer. What
could not be sent is held and sent again once Redis answers (``HOLD`` events at most); a page that
missed it meanwhile catches up when it resumes or resyncs (docs/dashboard.md, "Live stream").
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

from gangweb import stream
from scheduler.publishing import PublishRefused

logger = logging.getLogger(__name__)

SEND_TIMEOUT_SECONDS = 5
# While the log refuses events (Redis down), the sender holds at most this many, oldest dropped first,
# and tries again after a pause that doubles from the first to the last of RETRY_SECONDS.
HOLD = 10_000
RETRY_SECONDS = (0.5, 5.0)

# The ASGI server's event loop, once a websocket consumer has run in it. The in-memory channel layer's
# queues belong to that loop: a send from a plain thread (eviction workers) must be handed to it, or
# the consumers are not woken (async_to_sync would run the send on a throwaway loop of its own).
_server_loop: asyncio.AbstractEventLoop | None = None


def bind_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    global _server_loop
    _server_loop = loop


# Outside a web server (Celery workers, management commands), sends to a networked layer go through
# one long-lived loop per process, so channels-redis keeps its connections instead of opening a
# pool per event (async_to_sync: a new loop a send; docs/measurements.md). Keyed by pid: a forked worker
# starts its own.
_publisher: tuple[int, asyncio.AbstractEventLoop] | None = None
_publisher_lock = threading.Lock()


def _publisher_loop() -> asyncio.AbstractEventLoop:
    global _publisher
    with _publisher_lock:
        if _publisher is None or _publisher[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="gangweb-events", daemon=True).start()
            _publisher = (os.getpid(), loop)
        return _publisher[1]


def _target_loop(layer) -> asyncio.AbstractEventLoop | None:
    """The loop to hand the send to, or None to send on the caller's own (throwaway) loop."""
    if _server_loop is not None and _server_loop.is_running():
        return _server_loop
    if isinstance(layer, InMemoryChannelLayer):
        # Its queues live in whichever loop the consumers run in; only the caller can know it.
        return None
    return _publisher_loop()


class PublishFailed(PublishRefused):
    """The channel layer did not take the event (Redis down, a send timed out): a refusal under the
    seam's rule (``scheduler/publishing.py``), an outage rather than a bug."""


class _Batcher:
    """``publish``'s sender, one per process. What is published while the previous batch is on its way
    goes out in the next one, together: one round trip numbers, keeps and sends a whole batch
    (``stream.append_many``), in the order it was published. Nothing waits for a window to fill: alone,
    an event leaves at once, and the publisher (an eviction, a ledger write) never waits for Redis. One
    round trip per event capped what one process could publish (docs/measurements.md)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: list[dict[str, Any]] = []
        self._busy = False
        threading.Thread(target=self._run, name="gangweb-events-send", daemon=True).start()
        atexit.register(self.drain, SEND_TIMEOUT_SECONDS)  # a command's last events still leave

    def put(self, message: dict[str, Any]) -> None:
        with self._cond:
            self._pending.append(message)
            self._cond.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait until everything queued was sent (or refused); False when ``timeout`` ran out first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout=timeout)

    def _run(self) -> None:
        pause = 0.0
        while True:
            with self._cond:
                resume = time.monotonic() + pause
                while (left := resume - time.monotonic()) > 0:  # after a refusal: not before the pause
                    self._cond.wait(left)
                while not self._pending:
                    self._busy = False
                    self._cond.notify_all()
                    self._cond.wait()
                self._busy = True
                batch = self._pending[: stream.MAX_BATCH]
                del self._pending[: stream.MAX_BATCH]
            try:
                _deliver(batch)
            except PublishFailed as error:
                if _failed(batch[0]["type"], error, len(batch)):
                    self._hold(batch)
                    pause = min(max(2 * pause, RETRY_SECONDS[0]), RETRY_SECONDS[1])
                    continue
            except Exception:  # a bug: logged, and the sender goes on with the next batch
                logger.exception("a batch of %d live events could not be sent", len(batch))
            else:
                _outage.worked()
            pause = 0.0

    def _hold(self, batch: list[dict[str, Any]]) -> None:
        """``batch`` back at the head of the queue, to be sent again; beyond ``HOLD`` the oldest go."""
        with self._cond:
            self._pending[:0] = batch
            if (over := len(self._pending) - HOLD) > 0:
                del self._pending[:over]
                _outage.dropped(over)


_batchers: tuple[int, _Batcher] | None = None
_batchers_lock = threading.Lock()


def _batcher() -> _Batcher:
    global _batchers
    with _batchers_lock:
        if _batchers is None or _batchers[0] != os.getpid():  # a forked worker starts its own
            _batchers = (os.getpid(), _Batcher())
        return _batchers[1]


def flush(timeout: float = SEND_TIMEOUT_SECONDS) -> bool:
    """Wait until every event this process published has been sent or refused (tests, shutdown)."""
    return _batcher().drain(timeout)


def _message(event_type: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": event_type, "topic": stream.topic_of(event_type), "at": time.time(), "payload": payload}


def _deliver(items: list[dict[str, Any]]) -> dict[str, int]:
    """Number, keep and send ``items`` on their topics' feeds, in one round trip; each topic's first number."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for message in items:
        by_topic.setdefault(message["topic"], []).append(message)
    try:
        return stream.append_many(by_topic)
    except Exception as exc:
        raise PublishFailed(f"{type(exc).__name__}: {exc}"[:300]) from exc


def send(event_type: str, payload: dict[str, Any]) -> int:
    """Number, keep and send now, outside any transaction's timing; the event's sequence number in its
    topic. Raises ``PublishFailed`` when the log refuses it.

    For callers that count their own losses (the admission recorder) or need the number (the live
    map); everyone else uses ``publish``."""
    message = _message(event_type, payload)
    return _deliver([message])[message["topic"]]


def send_to_group(group: str, message: dict[str, Any]) -> None:
    """``message`` to every consumer in ``group`` now, from any thread (``PublishFailed`` when refused).

    How ``gangweb.access.sessions`` closes a user's sockets (its own groups, its own message type); live
    events go on their topics' feeds instead (``send``, ``publish``)."""
    layer = get_channel_layer()
    if layer is None:
        return
    loop = _target_loop(layer)
    try:
        if loop is not None and _running_loop() is not loop:
            asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop).result(
                timeout=SEND_TIMEOUT_SECONDS
            )
        else:
            async_to_sync(layer.group_send)(group, message)
    except Exception as exc:
        raise PublishFailed(f"{type(exc).__name__}: {exc}"[:300]) from exc


class _Outage:
    """One warning when sends start failing, one when they work again: never one per event (a busy
    pipeline sends many a second, and a traceback each would bury the log during a Redis outage)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.since: float | None = None
        self.lost = 0

    def failed(self, event_type: str, error: PublishFailed) -> None:
        with self._lock:
            if self.since is not None:
                return
            self.since = time.monotonic()
        logger.warning(
            "live events are not reaching the dashboard (%s); holding them (%d at most) and trying again",
            error,
            HOLD,
            extra={"event": event_type},
        )

    def dropped(self, count: int) -> None:
        with self._lock:
            self.lost += count

    def worked(self) -> None:
        if self.since is None:  # unlocked read: the common case costs nothing
            return
        with self._lock:
            if self.since is None:
                return
            lasted, lost, self.since, self.lost = time.monotonic() - self.since, self.lost, None, 0
        logger.warning(
            "live events reach the dashboard again after %.0f s; those held were sent, %d dropped",
            lasted,
            lost,
        )


_outage = _Outage()


def _failed(event_type: str, error: PublishFailed, count: int = 1) -> bool:
    """Tell the log; whether to hold the events and try again."""
    if isinstance(error.__cause__, RuntimeError):
        # Typically the process is shutting down (executors closed): nothing left to tell.
        logger.info("event not published: %s", error.__cause__, extra={"event": event_type})
        return False
    _outage.failed(event_type, error)
    return True


def _send(event_type: str, payload: dict[str, Any]) -> None:
    _batcher().put(_message(event_type, payload))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def publish(event_type: str, payload: dict[str, Any]) -> None:
    """Send ``payload`` to every subscribed browser once the current transaction commits.

    Outside a transaction it is sent at once. ``transaction.on_commit`` would open a database
    connection just to ask about autocommit, and processes that must work without a database (the
    webhook) publish too, so the atomic-block check is done here without touching the connection.
    """
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _send(event_type, payload))
    else:
        _send(event_type, payload)
