"""Settings come from the environment only; each case loads them in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PROBE = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "db_name": str(db["NAME"]), "db_host": db.get("HOST"),
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "broker": settings.CELERY_BROKER_URL, "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "debug": settings.DEBUG, "demo": settings.DEMO, "hosts": settings.ALLOWED_HOSTS,
    "cluster": settings.GANGWEB_CLUSTER, "mode": settings.GANGWEB_MODE,
    "ns_modes": settings.GANGWEB_NAMESPACE_MODES,
}))
"""

# Variables that must not leak from the test run's own environment into the probe.
CONTROLLED = ("DATABASE_URL", "REDIS_URL", "KUBECONFIG", "SECRET_KEY", "DEBUG", "GANGWEB_DEMO",
              "ALLOWED_HOSTS", "GANGWEB_CLUSTER", "GANGWEB_MODE", "GANGWEB_NAMESPACE_MODES",
              "KUBERNETES_SERVICE_HOST")


def load_settings(tmp_path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in CONTROLLED}
    clean.update({"DJANGO_SETTINGS_MODULE": "gangweb.settings", "GANGWEB_VAR_DIR": str(tmp_path)}, **env)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True)


def settings_for(tmp_path, **env: str) -> dict:
    result = load_settings(tmp_path, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_no_variables_means_the_embedded_demo(tmp_path):
    s = settings_for(tmp_path)
    assert s["engine"] == "django.db.backends.sqlite3"
    assert s["db_name"].startswith(str(tmp_path))
    assert s["layer"] == "channels.layers.InMemoryChannelLayer"
    assert s["broker"] == "memory://" and s["eager"] is True
    assert s["debug"] is False and s["demo"] is True
    assert s["cluster"] == "simulated" and s["mode"] == "enforce"
    assert "localhost" in s["hosts"]


def test_database_url_switches_to_postgresql(tmp_path):
    s = settings_for(tmp_path, DATABASE_URL="postgres://u@db.example:5433/gw", SECRET_KEY="k")
    assert s["engine"] == "django.db.backends.postgresql"
    assert (s["db_name"], s["db_host"]) == ("gw", "db.example")
    assert s["demo"] is False


def test_redis_url_switches_celery_and_channels_to_redis(tmp_path):
    s = settings_for(tmp_path, REDIS_URL="redis://cache.example:6380/2", SECRET_KEY="k")
    assert s["layer"] == "channels_redis.core.RedisChannelLayer"
    assert s["broker"] == "redis://cache.example:6380/2" and s["eager"] is False


def test_outside_the_demo_a_secret_key_is_required(tmp_path):
    result = load_settings(tmp_path, DATABASE_URL="postgres://u@db.example/gw")
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_allowed_hosts_debug_and_modes_come_from_the_environment(tmp_path):
    s = settings_for(
        tmp_path, ALLOWED_HOSTS="gangweb.example.com, .svc", DEBUG="true", GANGWEB_MODE="observe",
        GANGWEB_NAMESPACE_MODES="team-a=enforce,team-b=observe", KUBECONFIG="/nonexistent/kubeconfig",
        SECRET_KEY="k",
    )
    assert s["hosts"] == ["gangweb.example.com", ".svc"]
    assert s["debug"] is True
    assert s["mode"] == "observe" and s["cluster"] == "kube"
    assert s["ns_modes"] == {"team-a": "enforce", "team-b": "observe"}


@pytest.mark.parametrize(
    "env, message",
    [
        ({"DEBUG": "maybe"}, "DEBUG must be a boolean"),
        ({"GANGWEB_MODE": "chaos"}, "GANGWEB_MODE must be"),
        ({"GANGWEB_NAMESPACE_MODES": "team-a:observe"}, "GANGWEB_NAMESPACE_MODES entries"),
        ({"GANGWEB_SIM_NODES": "many"}, "GANGWEB_SIM_NODES must be an integer"),
        ({"GANGWEB_NAMESPACE_DISRUPTION_MODES": "team-a=some"}, "GANGWEB_NAMESPACE_DISRUPTION_MODES entries"),
        ({"GANGWEB_SIM_TICK_SECONDS": "soon"}, "GANGWEB_SIM_TICK_SECONDS must be a number"),
    ],
)
def test_bad_values_fail_with_a_message_naming_the_variable(tmp_path, env, message):
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr
