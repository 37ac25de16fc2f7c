"""Probes and metrics, as a kubelet and a Prometheus server would see them."""

from __future__ import annotations

import os

import httpx
import pytest

from tests.conftest import free_port, wait_for_port


def test_healthz_answers_without_touching_any_service(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_is_ok_when_database_and_redis_answer(client, settings, redis_url):
    settings.REDIS_URL = redis_url
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "redis"}


@pytest.mark.django_db
def test_readyz_names_redis_when_it_does_not_answer(client, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["redis"]
    assert body["checks"]["database"]["ok"] is True
    assert "Connection" in body["checks"]["redis"]["error"]


def test_readyz_names_the_database_when_it_does_not_answer(asgi_server):
    closed = free_port()
    base = asgi_server(
        env={
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/gangweb",
            "REDIS_URL": os.environ.get("REDIS_URL", ""),
            "SECRET_KEY": "test",
        }
    )
    response = httpx.get(f"http://{base}/readyz", timeout=15)
    assert response.status_code == 503
    assert "database" in response.json()["failing"]
    # The process itself is alive: liveness must not depend on the database.
    assert httpx.get(f"http://{base}/healthz", timeout=5).status_code == 200


def test_metrics_expose_request_latency_by_route(client):
    from prometheus_client import generate_latest

    from gangweb.metrics import REGISTRY

    client.get("/healthz")
    text = generate_latest(REGISTRY).decode()
    assert 'gangweb_http_request_duration_seconds_count{method="GET",route="healthz",status="200"}' in text


@pytest.mark.django_db
def test_the_web_serves_its_own_metrics_on_their_own_port_and_not_on_the_dashboards(asgi_server):
    from django.db import connection

    db = connection.settings_dict  # the test database, migrated
    assert db["ENGINE"].endswith("postgresql"), "needs DATABASE_URL (PostgreSQL)"
    metrics_port = free_port()
    base = asgi_server(
        env={
            "GANGWEB_WEB_METRICS_PORT": str(metrics_port),
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "SECRET_KEY": "test",
        }
    )
    assert httpx.get(f"http://{base}/healthz", timeout=10).status_code == 200
    assert httpx.get(f"http://{base}/metrics", timeout=10).status_code == 404
    wait_for_port(metrics_port)
    text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
    families = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    assert 'gangweb_http_request_duration_seconds_count{method="GET",route="healthz",status="200"}' in text
    assert {"gangweb_gpus", "gangweb_approvals_waiting", "gangweb_approvals_oldest_wait_seconds"} <= families
    assert "gangweb_approvals_waiting 0.0" in text  # read from the ledger (nothing waits in a fresh database)
    # Only the web's own families: none of the webhook's or the workers'.
    assert not [f for f in families if f.startswith(("gangweb_admission_", "gangweb_podgroup_preemption_"))]


def test_logs_are_json_lines(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = "import django, logging; django.setup(); logging.getLogger('gangweb.test').warning('hello', extra={'gang': 'ns/a'})"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "gangweb.settings",
            "GANGWEB_VAR_DIR": str(tmp_path),
            "SECRET_KEY": "test",
        },
    )
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello" and line["level"] == "WARNING" and line["gang"] == "ns/a"


def test_publishing_outside_a_transaction_needs_no_database(settings):
    """The webhook publishes admission decisions with the database down; that must not raise."""
    from django.db import connection

    from gangweb.events import publish

    connection.close()
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    publish("test.event", {"ok": True})  # no django_db mark: any connection attempt would fail the test
    assert connection.connection is None


def test_a_websocket_to_an_unknown_path_is_refused_not_a_server_error(asgi_server):
    import asyncio

    import websockets

    base = asgi_server()

    async def connect():
        async with websockets.connect(f"ws://{base}/ws/nope/", origin=f"http://{base}"):
            pass

    with pytest.raises(websockets.InvalidStatus) as refused:
        asyncio.run(connect())
    assert refused.value.response.status_code == 403


@pytest.mark.django_db
@pytest.mark.usefixtures("small_simulation")
def test_metrics_name_every_route_the_same_way_and_gauge_the_map(client):
    from prometheus_client import generate_latest

    from gangweb.dashboard import live
    from gangweb.metrics import REGISTRY

    live.reset()
    client.get("/")
    client.get("/api/v1/map/")
    client.get("/api/v1/requests/")
    live.refresh()
    text = generate_latest(REGISTRY).decode()
    for route in ("dashboard:overview", "api:v1:map", "api:v1:request-list"):
        assert f'route="{route}"' in text, route
    assert 'route="api/requests/$"' not in text
    picture, _ = live.current()
    assert f'gangweb_gpus{{state="allocated"}} {float(picture["totals"]["allocatedGpus"])}' in text
    assert f"gangweb_waiting_gangs {float(picture['totals']['waitingGangs'])}" in text
    live.reset()
