"""The live side of the dashboard: the cluster picture, and the ticker that moves the simulation.

The ticker is an asyncio task on the ASGI server's own event loop, not a free-running thread. Each
tick runs in Django's sync thread (``sync_to_async``), and ``gangweb.events.publish`` called from
there hops back onto the server loop (asgiref routes ``async_to_sync`` to the loop that spawned the
thread). That matters for ``InMemoryChannelLayer``: its queues are plain ``asyncio.Queue`` objects
that belong to the server loop, and a send from a foreign thread's loop would neither be thread-safe
nor wake the consumers. With channels-redis it also means one connection pool, not one per tick.

The ticker starts with the demo command and, in any ASGI server, when the first browser connects.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from gangweb.dashboard.picture import picture_from_objects
from gangweb.events import bind_server_loop, publish
from scheduler.cluster import Summarizes, current_objects
from scheduler.preemption.runtime import get_cluster

logger = logging.getLogger(__name__)

STATE_EVENT = "cluster.state"
_tickers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}


def simulation_running() -> bool:
    return settings.GANGWEB_CLUSTER == "simulated" and settings.GANGWEB_SIM_TICK_SECONDS > 0


def dashboard_is_public() -> bool:
    """The demo's dashboard is readable without a login; anywhere else it needs a signed-in user."""
    return bool(settings.DEMO)


def cluster_state() -> dict[str, Any]:
    """The full picture a browser draws (the ``cluster.state`` payload)."""
    try:
        cluster = get_cluster()
        if isinstance(cluster, Summarizes):
            return cluster.summary()
        return picture_from_objects(current_objects(cluster), now=time.time(), cluster=cluster.name)
    except Exception as exc:  # the page must load and say why, whatever the cluster does
        logger.warning("cannot read the cluster for the dashboard", exc_info=True)
        return _empty_state(settings.GANGWEB_CLUSTER, f"cannot read the cluster: {exc}")


def _empty_state(name: str, note: str) -> dict[str, Any]:
    return {
        "cluster": name,
        "time": "",
        "tick": 0,
        "racks": [],
        "gangs": [],
        "pending": [],
        "tiers": [],
        "totals": {},
        "note": note,
    }


def tick_and_publish() -> list[dict[str, Any]]:
    """Advance the simulation one step and send the new picture (with what changed) to browsers."""
    cluster = get_cluster()
    changes = cluster.tick()
    publish(STATE_EVENT, {**cluster.summary(), "changes": changes})
    return changes


async def run_ticker(interval: float) -> None:
    last_error = ""
    while True:
        await asyncio.sleep(interval)
        started = time.monotonic()
        try:
            await sync_to_async(tick_and_publish, thread_sensitive=True)()
            last_error = ""
        except Exception as exc:
            # One bad tick must not stop the picture; the next one starts from the cluster's state.
            # The same failure every tick is logged once with its traceback, not every two seconds.
            if str(exc) != last_error:
                logger.exception("simulation tick failed")
            last_error = str(exc)
        took = time.monotonic() - started
        if took > interval:
            logger.warning("simulation tick slower than its interval", extra={"seconds": round(took, 3)})


def ensure_ticker() -> asyncio.Task | None:
    """Start the ticker on the running loop unless it runs there already (call from async code)."""
    if not simulation_running():
        return None
    loop = asyncio.get_running_loop()
    bind_server_loop(loop)
    for other in [lp for lp in _tickers if lp.is_closed()]:
        del _tickers[other]
    task = _tickers.get(loop)
    if task is None or task.done():
        task = loop.create_task(run_ticker(settings.GANGWEB_SIM_TICK_SECONDS), name="gangweb-sim-ticker")
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
