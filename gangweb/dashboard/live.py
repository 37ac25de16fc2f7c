"""The live GPU map: the current picture with its sequence number, refreshed by the ticker.

Each refresh takes the picture of the process's shared reading of the cluster (``reading.take``: the
objects and their picture, built once and read by the REST API's rows too), publishes what changed as
one ``map.delta`` on the ``map`` topic (``stream.py`` numbers it), keeps the picture with that number
(``current``: what a page fetches first), and samples the chart's history. The ticker reads the cluster
anew after a simulation step; otherwise a reading younger than half its interval (the API's, taken a
moment before) is the one it publishes, so one process reads the cluster once per period, not twice.
Its build is paced (``reading.Pace``): it runs beside the requests of the same process.

The ticker is an asyncio task on the ASGI server's own event loop, not a free-running thread. Each
tick runs in the ticker's own thread (``TICK_THREAD``), not Django's one sync thread: the demo's
in-process beat runs its tasks there (a detection at 5,000 nodes takes seconds), and a tick queued behind
them left the kept picture stale, so pages built one themselves. ``gangweb.events.send`` called from the
tick hops back onto the server loop (``bind_server_loop``), which matters for ``InMemoryChannelLayer``
(its queues belong to the server loop). In the simulation a tick first moves the world one step; for a
real cluster it only refreshes the picture. While a ticker runs, ``current`` serves the kept picture
however old: the ticker is making the next one, and the page follows it by its deltas.
The ticker starts with the demo command and, in any ASGI server, when the first browser connects.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections

from gangweb import metrics, stream
from gangweb.clusterview import reading
from gangweb.dashboard import history, mapdelta
from gangweb.dashboard.admitting import admit_submitted
from gangweb.events import PublishFailed, bind_server_loop, send
from scheduler.cluster import Steps
from scheduler.preemption.runtime import get_cluster

logger = logging.getLogger(__name__)

_tickers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
# One thread for every tick of the process, in order, beside the requests' and the beat's threads.
TICK_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gangweb-map-ticker")
_lock = threading.Lock()
_current: dict[str, Any] = {"picture": None, "seq": 0}
# Called, in the refreshing thread, after each new picture is kept (the API encodes map/ there, off requests).
_kept_listeners: list[Callable[[], None]] = []


def on_picture_kept(listener: Callable[[], None]) -> None:
    if listener not in _kept_listeners:
        _kept_listeners.append(listener)


def simulation_running() -> bool:
    return settings.GANGWEB_CLUSTER == "simulated" and settings.GANGWEB_SIM_TICK_SECONDS > 0


def tick_interval() -> float:
    return settings.GANGWEB_SIM_TICK_SECONDS if simulation_running() else settings.GANGWEB_MAP_REFRESH_SECONDS


def read_picture(max_age: float = 0.0, *, paced: bool = False) -> dict[str, Any]:
    """The picture of a reading of the cluster no older than ``max_age`` seconds (0: read it now), or an
    empty one that says why there is none."""
    try:
        return reading.take(get_cluster(), max_age=max_age, paced=paced).picture
    except Exception as exc:  # the page must load and say why, whatever the cluster does
        logger.warning("cannot read the cluster for the dashboard", exc_info=True)
        return empty_picture(settings.GANGWEB_CLUSTER, f"cannot read the cluster: {exc}")


def empty_picture(name: str, note: str) -> dict[str, Any]:
    picture = {"cluster": name, "time": time.time(), "domains": [], "nodes": [], "gangs": [], "tiers": []}
    from gangweb.clusterview.picture import totals

    return {**picture, "totals": totals(picture), "note": note}


def stale_after() -> float:
    """Seconds after which the kept picture is read again by whoever asks for it: the ticker keeps it
    younger while it runs, but it runs only in a process with a browser connected, and ``map/``,
    ``overview/`` and a gang's page are read by tools too."""
    return max(3 * tick_interval(), 5.0)


def ticking() -> bool:
    """Whether a ticker runs in this process (it keeps the picture and publishes its deltas)."""
    return any(not task.done() and loop.is_running() for loop, task in list(_tickers.items()))


def current() -> tuple[dict[str, Any], int]:
    """The latest picture and the ``map`` sequence number it includes (later deltas apply on top). Where
    no ticker runs, a picture older than ``stale_after`` is refreshed first (published like the
    ticker's, so a page following the stream stays in step); where one runs, the kept picture is
    served as it is, never read and built on a request."""
    with _lock:
        kept = _current["picture"]
        if kept is not None and (ticking() or time.time() - kept["time"] <= stale_after()):
            return kept, _current["seq"]
    if kept is not None:
        refresh(tick_interval())
        with _lock:
            return _current["picture"], _current["seq"]
    picture = read_picture(tick_interval())
    with _lock:
        if _current["picture"] is None:
            _current["picture"], _current["seq"] = picture, stream.log().last("map")
        return _current["picture"], _current["seq"]


def refresh(max_age: float = 0.0, *, paced: bool = False) -> dict[str, Any]:
    """Read the cluster (or take a reading younger than ``max_age``), publish what changed, keep the new
    picture; returns it."""
    new = read_picture(max_age, paced=paced)
    with _lock:
        old = _current["picture"]
        if new is old:  # the reading published last time
            return new
        delta = mapdelta.diff(old, new) if old is not None else None
        try:
            if delta is None:
                seq = send("map.reset", {"time": new["time"]})
            elif delta["nodes"] or delta["gangs"] or delta["gone"]:
                seq = send("map.delta", delta)
            else:
                seq = _current["seq"]
        except PublishFailed:
            logger.info("map change not published; browsers resync on their next reconnect")
            seq = _current["seq"]
        _current["picture"], _current["seq"] = new, seq or _current["seq"]
    for listener in _kept_listeners:
        try:
            listener()
        except Exception:  # the picture is kept and published; a request encodes it instead
            logger.warning("a listener of the kept picture failed", exc_info=True)
    metrics.observe_map(new["totals"])
    try:
        history.maybe_sample(new)
    except DatabaseError:
        logger.warning("cannot record the GPU history sample", exc_info=True)
    return new


def reset() -> None:
    """Forget the kept picture and the process's reading (tests, a cluster swapped under the process)."""
    with _lock:
        _current["picture"], _current["seq"] = None, 0
    reading.forget()


def tick_and_publish() -> list[dict[str, Any]]:
    """Advance the simulation one step (if it runs) and publish the map's change and the world's news."""
    changes: list[dict[str, Any]] = []
    cluster = get_cluster()
    moved = simulation_running() and isinstance(cluster, Steps)
    if moved:
        changes = cluster.tick()
    refresh(0.0 if moved else tick_interval() / 2, paced=True)
    for change in changes:
        # A checkpoint is news when it answers a notice (the regular ones would bury the feed).
        if change.get("type") in NEWS or (
            change.get("type") == "gang-checkpointed" and change.get("onNotice")
        ):
            try:
                send("cluster." + change["type"], change)
            except PublishFailed:
                break
    admit_submitted(cluster, changes)  # the demo's pods reach /decisions/ as a real cluster's would
    return changes


def _tick() -> None:
    """One tick in ``TICK_THREAD``, its database connection looked after as a request's is."""
    close_old_connections()
    try:
        tick_and_publish()
    finally:
        close_old_connections()


# The simulated world's changes worth a line in the activity feed (ticks bind and finish many more).
NEWS = {"gang-submitted", "gang-bound", "gang-restarted", "pod-evicted", "gang-abandoned", "event"}


# A slow tick is said once, then at most this often with how many there were (a loaded demo machine is slow
# every tick: a line every two seconds would bury the terminal's banner).
SLOW_TICK_REPORT_SECONDS = 600.0


async def run_ticker(interval: float) -> None:
    """Tick every ``interval`` seconds; after a tick that took longer, wait as long as it took: a tick
    that cannot keep up (5,000 simulated nodes on a loaded machine) then takes at most half the
    process, and the pages' requests the other half."""
    last_error = ""
    slow, reported = 0, -SLOW_TICK_REPORT_SECONDS
    took = 0.0
    while True:
        await asyncio.sleep(max(interval, took))
        started = time.monotonic()
        try:
            await sync_to_async(_tick, thread_sensitive=False, executor=TICK_THREAD)()
            last_error = ""
        except Exception as exc:
            # One bad tick must not stop the picture; the next one starts from the cluster's state.
            # The same failure every tick is logged once with its traceback, not every two seconds.
            if str(exc) != last_error:
                logger.exception("dashboard tick failed")
            last_error = str(exc)
        took = time.monotonic() - started
        if took > interval:
            slow += 1
            if started - reported >= SLOW_TICK_REPORT_SECONDS:
                logger.warning(
                    "dashboard tick slower than its interval",
                    extra={"seconds": round(took, 3), "interval": interval, "slowTicks": slow},
                )
                slow, reported = 0, started


def ensure_ticker() -> asyncio.Task | None:
    """Start the ticker on the running loop unless it runs there already (call from async code)."""
    if tick_interval() <= 0:
        return None
    loop = asyncio.get_running_loop()
    bind_server_loop(loop)
    for other in [lp for lp in _tickers if lp.is_closed()]:
        del _tickers[other]
    task = _tickers.get(loop)
    if task is None or task.done():
        task = loop.create_task(run_ticker(tick_interval()), name="gangweb-map-ticker")
        _tickers[loop] = task
    return task


async def stop_ticker() -> None:
    task = _tickers.pop(asyncio.get_running_loop(), None)
    if task is not None:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
