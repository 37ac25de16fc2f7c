"""The dashboard's pages, their JSON and the live stream ``ws/live/``, in process (Channels communicator,
Django test client)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection, connections

from gangweb import stream
from gangweb.access.scope import VIEWER, Scope
from gangweb.asgi import application
from gangweb.dashboard import consumers, live
from gangweb.events import publish, send
from scheduler.engine import DUMP_COMMAND

ORIGIN = [(b"origin", b"http://127.0.0.1")]
PAGES = ["/", "/gangs/", "/gangs/team-a/job/", "/preemptions/", "/what-if/", "/decisions/", "/queues/"]
# The auth middleware of the websocket stack closes stale connections, so even a socket touches the DB layer.
pytestmark = [pytest.mark.usefixtures("small_simulation"), pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def close_sync_thread_connections():
    """Publishing opens a connection in asgiref's sync thread; close it so the test DB can be dropped."""
    live.reset()
    yield
    live.reset()
    await sync_to_async(connections.close_all)()


async def connected() -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, "/ws/live/", headers=ORIGIN)
    ok, _ = await communicator.connect()
    assert ok
    return communicator


async def subscribed(topics: dict, backfill: dict | None = None) -> tuple[WebsocketCommunicator, dict]:
    """A socket subscribed to ``topics``; what the server resent before its answer is read again first."""
    communicator = await connected()
    await communicator.send_json_to({"type": "subscribe", "topics": topics, "backfill": backfill or {}})
    early = []
    while (message := await communicator.receive_json_from(timeout=10))["type"] != "subscribed":
        early.extend(message["messages"] if message["type"] == "batch" else [message])
    communicator.early = early
    return communicator, message["topics"]


async def next_of(communicator: WebsocketCommunicator, kind: str, timeout: float = 10) -> dict:
    """The next message of ``kind``; those passed over on the way are kept in ``communicator.passed``."""
    early = getattr(communicator, "early", [])
    while early:
        message = early.pop(0)
        if message["type"] == kind:
            return message
        communicator.passed = [*getattr(communicator, "passed", []), message]
    return await _next_of(communicator, kind, timeout)


async def _next_of(communicator: WebsocketCommunicator, kind: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        message = await communicator.receive_json_from(timeout=left)
        if message["type"] == "batch":
            communicator.early = [*getattr(communicator, "early", []), *message["messages"]]
            return await next_of(communicator, kind, max(left, 0.1))
        if message["type"] == kind:
            return message
        communicator.passed = [*getattr(communicator, "passed", []), message]
    raise TimeoutError(kind)


async def test_a_map_change_arrives_as_a_small_numbered_delta():
    picture, _ = await sync_to_async(live.current)()
    communicator, topics = await subscribed({"map": None})
    from scheduler.preemption.runtime import get_cluster

    cluster = get_cluster()
    deltas = []
    for _ in range(40):  # until a square on the map moved
        await sync_to_async(cluster.tick)()
        await sync_to_async(live.refresh)()
        if live.current()[1] > topics["map"] + len(deltas):
            deltas.append(await next_of(communicator, "map.delta"))
            if deltas[-1]["payload"]["nodes"]:
                break
    assert [d["seq"] for d in deltas] == list(range(topics["map"] + 1, topics["map"] + 1 + len(deltas)))
    assert all(d["topic"] == "map" for d in deltas)
    payload = deltas[-1]["payload"]
    assert payload["nodes"] and all(len(entry[1]) == 8 for entry in payload["nodes"])
    assert len(payload["nodes"]) < len(picture["nodes"]) or len(picture["nodes"]) <= 16
    await communicator.disconnect()


async def test_ledger_events_reach_the_subscribers_of_their_topic_only():
    ledger, _ = await subscribed({"ledger": None})
    decisions, _ = await subscribed({"decisions": None})
    await sync_to_async(publish)("plan.created", {"podGroup": "team-a/big", "reason": "evict two pods"})
    message = await next_of(ledger, "plan.created")
    assert message["payload"] == {"podGroup": "team-a/big", "reason": "evict two pods"}
    assert await decisions.receive_nothing(timeout=0.3)
    await ledger.disconnect()
    await decisions.disconnect()


async def test_a_reconnect_resumes_after_the_last_number_without_loss_or_duplicate():
    first, topics = await subscribed({"ledger": None})
    seen = []
    await sync_to_async(publish)("plan.created", {"podGroup": "team-a/a", "n": 1})
    seen.append(await next_of(first, "plan.created"))
    await first.disconnect()
    # Offline: two more events happen.
    for n in (2, 3):
        await sync_to_async(publish)("plan.created", {"podGroup": "team-a/a", "n": n})
    again, _ = await subscribed({"ledger": seen[-1]["seq"]})
    for n in (4, 5):  # the next one after 4 is 5: nothing came twice in between
        await sync_to_async(publish)("plan.created", {"podGroup": "team-a/a", "n": n})
    for _ in range(4):
        seen.append(await next_of(again, "plan.created"))
    assert [m["payload"]["n"] for m in seen] == [1, 2, 3, 4, 5]
    assert [m["seq"] for m in seen] == list(range(topics["ledger"] + 1, topics["ledger"] + 6))
    await again.disconnect()


async def test_a_page_holding_another_epochs_numbers_is_told_to_resync_with_the_epoch_now():
    """Numbers from before Redis came back empty are not resumed from, even where the new log has them."""
    start = await sync_to_async(stream.log().last)("activity")
    await sync_to_async(send)("cluster.gang-bound", {"podGroup": "team-a/x"})
    epoch = await sync_to_async(stream.epoch)()
    communicator = await connected()
    held = {"type": "subscribe", "epoch": f"before-{epoch}", "topics": {"activity": start}}
    await communicator.send_json_to(held)
    message = await next_of(communicator, "resync")
    assert message["topic"] == "activity" and message["seq"] == start + 1 and message["epoch"] == epoch
    assert (await next_of(communicator, "subscribed"))["epoch"] == epoch
    await communicator.disconnect()


async def test_a_reader_that_missed_more_than_the_log_keeps_is_told_to_resync(monkeypatch):
    monkeypatch.setitem(stream.KEEP, "activity", 3)
    start = await sync_to_async(stream.log().last)("activity")
    for n in range(6):
        await sync_to_async(send)("cluster.gang-bound", {"podGroup": "team-a/x", "n": n})
    communicator, _ = await subscribed({"activity": start})
    message = await next_of(communicator, "resync")
    assert message["topic"] == "activity" and message["seq"] == start + 6
    await communicator.disconnect()


async def test_the_activity_feed_is_backfilled_on_load():
    for n in range(3):
        await sync_to_async(send)("cluster.gang-submitted", {"podGroup": f"team-a/g{n}", "gpus": 8})
    communicator, _ = await subscribed({"activity": None}, {"activity": 2})
    got = [await next_of(communicator, "cluster.gang-submitted") for _ in range(2)]
    assert [m["payload"]["podGroup"] for m in got] == ["team-a/g1", "team-a/g2"]
    assert all(m["backfill"] for m in got)
    await communicator.disconnect()


async def test_a_team_reader_gets_no_other_teams_news(monkeypatch):
    team_a = Scope(user="alice", per_namespace={"team-a": VIEWER})
    monkeypatch.setattr(consumers, "scope_for", lambda user: team_a)
    communicator, _ = await subscribed({"ledger": None, "decisions": None})
    await sync_to_async(publish)("plan.created", {"podGroup": "team-b/secret", "reason": "b"})
    await sync_to_async(send)(
        "admission.decisions",
        {
            "decisions": [{"namespace": "team-b", "name": "p"}, {"namespace": "team-a", "name": "q"}],
            "count": 2,
        },
    )
    await sync_to_async(publish)("plan.created", {"podGroup": "team-a/mine", "reason": "a"})
    decisions = await next_of(communicator, "admission.decisions")
    assert [d["name"] for d in decisions["payload"]["decisions"]] == ["q"]
    plan = await next_of(communicator, "plan.created")
    assert plan["payload"]["podGroup"] == "team-a/mine"
    # team-b's plan was published first, on the same topic: anything of it would have come before.
    assert "team-b" not in json.dumps([*getattr(communicator, "passed", []), decisions, plan])
    await communicator.disconnect()


async def test_garbage_is_ignored_and_ping_answers():
    communicator = await connected()
    await communicator.send_to(text_data="this is not json")
    await communicator.send_json_to(["not", "a", "request"])
    await communicator.send_json_to({"type": "subscribe", "topics": "map"})
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.send_json_to({"type": "ping"})
    assert (await communicator.receive_json_from(timeout=5))["type"] == "pong"
    await communicator.disconnect()


async def test_the_socket_needs_a_login_outside_the_demo(settings):
    settings.DEMO = False
    communicator = WebsocketCommunicator(application, "/ws/live/", headers=ORIGIN)
    ok, code = await communicator.connect()
    assert not ok
    assert code == 4401


async def test_the_ticker_runs_once_per_loop_and_publishes_deltas(settings):
    settings.GANGWEB_SIM_TICK_SECONDS = 0.05
    communicator, topics = await subscribed({"map": None})  # connecting starts the ticker
    try:
        assert live.ensure_ticker() is live.ensure_ticker()
        seqs = [(await next_of(communicator, "map.delta"))["seq"] for _ in range(3)]
        assert seqs == sorted(seqs) and seqs[0] > topics["map"] and len(set(seqs)) == 3
    finally:
        await live.stop_ticker()
        await communicator.disconnect()


async def test_events_published_from_a_plain_thread_arrive_promptly():
    # The eviction workers of the pipeline publish from their own threads, outside any event loop.
    communicator, _ = await subscribed({"ledger": None})
    sent = threading.Event()

    def evictor_thread():
        try:
            publish("eviction", {"podGroup": "team-a/big", "pod": "team-a/worker-0", "state": "evicted"})
            sent.set()
        finally:
            connection.close()  # as the pipeline's eviction threads do

    started = time.monotonic()
    threading.Thread(target=evictor_thread).start()
    message = await next_of(communicator, "eviction")
    assert message["payload"]["pod"] == "team-a/worker-0"
    # A send that does not wake the server loop is seen only when the loop wakes for something else;
    # an ordinary wake-up takes milliseconds, a loaded machine's a few hundred.
    assert time.monotonic() - started < 5.0
    assert sent.wait(timeout=5)
    await communicator.disconnect()


async def test_a_burst_arrives_complete_in_order_and_numbered_once():
    # 300 events published as fast as a thread can: they leave in batches, and each socket gets every
    # one, in order, with consecutive numbers (the frames carry several at once). A last event follows
    # them: the very next eviction message after the 300th is it, so nothing came twice.
    first, topics = await subscribed({"ledger": None})
    second, _ = await subscribed({"ledger": None})

    def burst():
        try:
            for n in range(300):
                publish("eviction", {"podGroup": "team-a/burst", "n": n})
            publish("eviction", {"podGroup": "team-a/burst", "n": "last"})
        finally:
            connection.close()

    threading.Thread(target=burst).start()
    for communicator in (first, second):
        got = [await next_of(communicator, "eviction", timeout=30) for _ in range(301)]
        assert [m["payload"]["n"] for m in got] == [*range(300), "last"]
        assert [m["seq"] for m in got] == list(range(topics["ledger"] + 1, topics["ledger"] + 302))
        await communicator.disconnect()


# --- pages and their JSON ------------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_its_shell(client, path):
    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="data-urls"' in html and "/static/dashboard/common.js" in html
    assert 'aria-current="page"' in html


def test_the_what_if_page_prints_the_snapshot_contracts_dump_command(client):
    assert f"<code>{DUMP_COMMAND}</code>" in client.get("/what-if/").content.decode()


@pytest.mark.parametrize("path", PAGES)
def test_the_pages_send_anonymous_users_to_the_login_outside_the_demo(client, settings, path):
    settings.DEMO = False
    response = client.get(path)
    assert response.status_code == 302
    assert "next=" in response["Location"]


def test_the_header_names_the_signed_in_user_and_offers_sign_out(client, django_user_model, settings):
    settings.DEMO = False
    user = django_user_model.objects.create_superuser(
        "ops", "ops@example.com", "pw", first_name="Olga", last_name="Ops"
    )
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "Olga Ops" in html and "admin admin" not in html
    assert 'action="/logout/"' in html and "Sign out" in html


def test_the_picture_json_carries_its_sequence_number(client):
    picture = client.get("/api/v1/map/").json()
    assert len(picture["nodes"]) == 16 and picture["totals"]["gpus"] == 128
    assert isinstance(picture["seq"], int)


def test_one_gangs_json(client):
    key = client.get("/api/v1/podgroups/", {"state": "pending,short"}).json()["results"][0]["podGroup"]
    namespace, name = key.split("/")
    detail = client.get(f"/api/v1/podgroups/{namespace}/{name}/").json()
    assert detail["podGroup"] == key and len(detail["members"]) == detail["pods"]
    assert any(c["type"] == "PodGroupInitiallyScheduled" for c in detail["conditions"])
    on_map = next(g for g in client.get("/api/v1/map/").json()["gangs"] if g["key"] == key)
    assert (detail["tier"], detail["shade"]) == (on_map["tier"], on_map["shade"])


def test_the_page_says_why_when_the_cluster_cannot_be_read(client, settings, monkeypatch, tmp_path):
    from scheduler.preemption.runtime import reset_cluster

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    settings.GANGWEB_CLUSTER = "kube"
    reset_cluster()
    live.reset()
    assert client.get("/").status_code == 200
    assert "cannot read the cluster" in client.get("/api/v1/map/").json()["note"]
