"""Sinks are admin data: ``/api/v1/notify/`` for admins only, the ``notify`` command, and only http(s) to
the allowed hosts."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from gangweb.access.grants import grant
from gangweb.notify import config
from gangweb.notify.models import Sink
from tests.gangweb.notify.sinks import Sink as LocalSink

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def allowed(settings):
    settings.GANGWEB_NOTIFY_ALLOWED_HOSTS = ["127.0.0.1", "hooks.example:8443"]
    settings.CELERY_TASK_ALWAYS_EAGER = True


def signed_in(user: str, role: str, **where) -> Client:
    grant(user, role, **where)
    client = Client()
    client.force_login(User.objects.get(username=user))
    return client


SINK = {
    "name": "team-a-chat",
    "kind": "slack",
    "url": "https://hooks.example:8443/services/T0",
    "route": {"namespaces": ["team-a"]},
}


def test_an_admin_adds_lists_and_removes_sinks_and_sees_every_attempt():
    admin = signed_in("root", "admin", all_namespaces=True)
    made = admin.post("/api/v1/notify/sinks/", SINK, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["route"] == {"allNamespaces": False, "namespaces": ["team-a"]}
    listed = admin.get("/api/v1/notify/sinks/").json()
    assert [s["name"] for s in listed["results"]] == ["team-a-chat"]
    assert admin.get("/api/v1/notify/sinks/team-a-chat/").json()["kind"] == "slack"
    assert admin.delete("/api/v1/notify/sinks/team-a-chat/").status_code == 204
    assert admin.get("/api/v1/notify/sinks/team-a-chat/").status_code == 404


def test_the_deliveries_show_each_attempt():
    from scheduler.preemption import ledger

    local = LocalSink(failures=1)
    try:
        config.add_sink("flaky", kind="cloudevents", url=local.url, all_namespaces=True)
        ledger.open_request("team-a", "train", mode="enforce", trigger="test")
        admin = signed_in("root", "admin", all_namespaces=True)
        [row] = admin.get("/api/v1/notify/deliveries/?sink=flaky").json()["results"]
        assert row["state"] == "pending" and row["kind"] == "request.opened"
        [attempt] = row["attempts"]
        assert attempt["status"] == 500 and not attempt["ok"] and "sink is broken" in attempt["error"]
        bad = admin.get("/api/v1/notify/deliveries/?state=lost")
        assert bad.status_code == 400 and bad["Content-Type"].startswith("application/problem+json")
    finally:
        local.close()


@pytest.mark.parametrize(
    "change, words",
    [
        ({"url": "https://evil.example/x"}, "not in GANGWEB_NOTIFY_ALLOWED_HOSTS"),
        ({"url": "https://hooks.example/x"}, "not in GANGWEB_NOTIFY_ALLOWED_HOSTS"),  # the port is part of it
        ({"url": "file:///etc/passwd"}, "http:// or https://"),
        ({"url": "https://u:p@hooks.example:8443/"}, "credentials"),
        ({"route": {"namespaces": ["Team_A"]}}, "not a Kubernetes namespace name"),
        ({"route": {"namespaces": ["team-a"], "allNamespaces": True}}, "exactly one"),
        ({"route": {}}, "exactly one"),
    ],
)
def test_a_bad_sink_is_a_problem_and_writes_nothing(change, words):
    admin = signed_in("root", "admin", all_namespaces=True)
    answer = admin.post("/api/v1/notify/sinks/", {**SINK, **change}, content_type="application/json")
    assert answer.status_code == 400 and answer["Content-Type"].startswith("application/problem+json")
    assert words in answer.json()["detail"]
    assert not Sink.objects.exists()


def test_sinks_are_admin_data():
    operator = signed_in("ops", "operator", namespaces=["team-a"])
    everywhere_viewer = signed_in("watcher", "viewer", all_namespaces=True)
    for client in (operator, everywhere_viewer):
        assert client.get("/api/v1/notify/sinks/").status_code == 403
        assert client.get("/api/v1/notify/deliveries/").status_code == 403
        assert client.post("/api/v1/notify/sinks/", SINK, content_type="application/json").status_code == 403
    assert Client().get("/api/v1/notify/sinks/").status_code == 401
    assert not Sink.objects.exists()


def notify(capsys, *args: str) -> tuple[str, str, int]:
    try:
        call_command("notify", *args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code)
    out, err = capsys.readouterr()
    return out, err, code


def test_the_notify_command(capsys):
    out, err, code = notify(
        capsys,
        "add",
        "pager",
        "--kind",
        "alertmanager",
        "--url",
        "https://hooks.example:8443",
        "--all-namespaces",
    )
    assert code == 0, err
    assert out.strip() == "added sink pager: alertmanager to https://hooks.example:8443 for all namespaces"
    out, _, _ = notify(capsys, "list", "-o", "json")
    [sink] = json.loads(out)
    assert (sink["name"], sink["route"]["allNamespaces"]) == ("pager", True)
    out, _, _ = notify(capsys, "list")
    assert out.splitlines()[0].split() == ["NAME", "KIND", "ROUTE", "PENDING", "DELIVERED", "GAVE_UP"]
    assert out.splitlines()[1].split() == ["pager", "alertmanager", "*", "0", "0", "0"]
    _, err, code = notify(
        capsys, "add", "x", "--kind", "slack", "--url", "http://10.0.0.1/", "--namespaces", "a"
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not in GANGWEB_NOTIFY_ALLOWED_HOSTS" in err
    out, _, code = notify(capsys, "remove", "pager")
    assert code == 0 and out.strip() == "removed sink pager and its 0 deliveries"
    assert json.loads(notify(capsys, "list", "-o", "json")[0]) == []
    assert notify(capsys, "remove", "pager")[2] == 2
