"""The first dashboard page and its websocket, in process (Channels communicator, Django test client)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection, connections

from gangweb.asgi import application
from gangweb.dashboard import live
from gangweb.events import publish

ORIGIN = [(b"origin", b"http://127.0.0.1")]
# The auth middleware of the websocket stack closes stale connections, so even a socket touches the DB layer.
pytestmark = [pytest.mark.usefixtures("small_simulation"), pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def close_sync_thread_connections():
    """Publishing opens a connection in asgiref's sync thread; close it so the test DB can be dropped."""
    yield
    await sync_to_async(connections.close_all)()


async def connected() -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, "/ws/cluster/", headers=ORIGIN)
    ok, _ = await communicator.connect()
    assert ok
    return communicator


def assert_is_a_state(message: dict, nodes: int = 16) -> dict:
    assert message["event"] == "cluster.state"
    state = message["payload"]
    assert sum(len(rack["nodes"]) for rack in state["racks"]) == nodes
    assert state["totals"]["gpus"] == nodes * 8
    return state


async def test_whole_picture_on_connect_then_a_fresh_one_each_tick():
    communicator = await connected()
    first = assert_is_a_state(await communicator.receive_json_from(timeout=5))
    assert [rack["name"] for rack in first["racks"]] == ["rack-0", "rack-1"]
    assert all(len(node["gpus"]) == 8 for rack in first["racks"] for node in rack["nodes"])

    changes = await sync_to_async(live.tick_and_publish)()
    update = assert_is_a_state(await communicator.receive_json_from(timeout=5))
    assert update["tick"] == first["tick"] + 1
    assert update["changes"] == changes
    await communicator.disconnect()


async def test_other_dashboard_events_reach_the_browser_too():
    communicator = await connected()
    await communicator.receive_json_from(timeout=5)
    await sync_to_async(publish)("plan.created", {"podGroup": "team-a/big", "reason": "evict two pods"})
    message = await communicator.receive_json_from(timeout=5)
    assert message["event"] == "plan.created"
    assert message["payload"] == {"podGroup": "team-a/big", "reason": "evict two pods"}
    await communicator.disconnect()


async def test_garbage_is_ignored_and_refresh_resends_the_picture():
    communicator = await connected()
    await communicator.receive_json_from(timeout=5)
    await communicator.send_to(text_data="this is not json")
    await communicator.send_json_to(["not", "a", "request"])
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.send_json_to({"type": "refresh"})
    assert_is_a_state(await communicator.receive_json_from(timeout=5))
    await communicator.disconnect()


async def test_the_socket_needs_a_login_outside_the_demo(settings):
    settings.DEMO = False
    communicator = WebsocketCommunicator(application, "/ws/cluster/", headers=ORIGIN)
    ok, code = await communicator.connect()
    assert not ok
    assert code == 4401


async def test_the_ticker_runs_once_per_loop_and_publishes(settings):
    settings.GANGWEB_SIM_TICK_SECONDS = 0.05
    communicator = await connected()  # connecting starts the ticker
    try:
        first = assert_is_a_state(await communicator.receive_json_from(timeout=5))
        assert live.ensure_ticker() is live.ensure_ticker()
        ticks = []
        for _ in range(3):
            ticks.append(assert_is_a_state(await communicator.receive_json_from(timeout=5))["tick"])
        assert ticks == sorted(ticks) and ticks[0] > first["tick"]
    finally:
        await live.stop_ticker()
        await communicator.disconnect()


def test_the_page_carries_the_first_picture(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/dashboard/cluster.js" in html and "/static/dashboard/cluster.css" in html
    start = html.index('<script id="initial-state" type="application/json">') + len(
        '<script id="initial-state" type="application/json">'
    )
    state = json.loads(html[start : html.index("</script>", start)])
    assert sum(len(rack["nodes"]) for rack in state["racks"]) == 16
    assert f'id="stat-allocated">{state["totals"]["allocatedGpus"]}<' in html
    assert 'href="/login/?next=/"' in html  # the demo's anonymous reader may sign in


def test_the_page_sends_anonymous_users_to_the_login_outside_the_demo(client, settings):
    settings.DEMO = False
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/")


def test_signed_in_users_see_the_page_outside_the_demo(admin_client, settings):
    settings.DEMO = False
    response = admin_client.get("/")
    assert response.status_code == 200
    assert b"initial-state" in response.content and b"admin" in response.content


async def test_events_published_from_a_plain_thread_arrive_promptly():
    # The eviction workers of the pipeline publish from their own threads, outside any event loop.
    communicator = await connected()
    await communicator.receive_json_from(timeout=5)
    sent = threading.Event()

    def evictor_thread():
        try:
            publish("eviction", {"pod": "team-a/worker-0", "state": "evicted"})
            sent.set()
        finally:
            connection.close()  # as the pipeline's eviction threads do

    started = time.monotonic()
    threading.Thread(target=evictor_thread).start()
    message = await communicator.receive_json_from(timeout=10)
    assert message["event"] == "eviction" and message["payload"]["pod"] == "team-a/worker-0"
    # A send that does not wake the server loop is seen only when the loop wakes for something else,
    # here the receive's 10 s timeout; an ordinary wake-up takes milliseconds, a loaded machine's a few
    # hundred. The bound tells the two apart without betting on the machine being quiet.
    assert time.monotonic() - started < 5.0
    assert sent.wait(timeout=5)
    await communicator.disconnect()


def test_the_page_says_why_when_the_cluster_cannot_be_read(client, settings, monkeypatch, tmp_path):
    from scheduler.preemption.runtime import reset_cluster

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    settings.GANGWEB_CLUSTER = "kube"
    reset_cluster()
    response = client.get("/")
    assert response.status_code == 200
    assert "cannot read the cluster" in response.content.decode()
