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
DEMO_KEY = "gangweb-demo-insecure-key-do-not-use-in-production"  # public, in settings.py
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
    "demo_key": settings.SECRET_KEY == DEMO_KEY, "key": settings.SECRET_KEY,
}))
"""

# Variables that must not leak from the test run's own environment into the probe.
CONTROLLED = (
    "DATABASE_URL",
    "REDIS_URL",
    "KUBECONFIG",
    "SECRET_KEY",
    "DEBUG",
    "GANGWEB_DEMO",
    "ALLOWED_HOSTS",
    "GANGWEB_CLUSTER",
    "GANGWEB_MODE",
    "GANGWEB_NAMESPACE_MODES",
    "KUBERNETES_SERVICE_HOST",
)


def load_settings(tmp_path, probe: str = PROBE, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in CONTROLLED}
    clean.update({"DJANGO_SETTINGS_MODULE": "gangweb.settings", "GANGWEB_VAR_DIR": str(tmp_path)}, **env)
    return subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def error_line(result: subprocess.CompletedProcess) -> str:
    """The exception's own line (the traceback above it quotes source lines)."""
    assert result.returncode != 0, result.stdout
    return result.stderr.strip().splitlines()[-1]


def settings_for(tmp_path, **env: str) -> dict:
    result = load_settings(tmp_path, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_no_variables_means_the_embedded_demo(tmp_path):
    s = settings_for(tmp_path)
    assert s["engine"] == "django.db.backends.sqlite3"
    assert s["db_name"].startswith(str(tmp_path))
    assert s["layer"] == "channels.layers.InMemoryChannelLayer"
    assert s["broker"] == "memory://localhost//" and s["eager"] is True
    assert s["debug"] is False and s["demo"] is True
    assert s["cluster"] == "simulated" and s["mode"] == "enforce"
    assert "localhost" in s["hosts"]
    assert s["demo_key"] is True  # the one case that runs on the built-in key


def test_database_url_switches_to_postgresql(tmp_path):
    s = settings_for(tmp_path, DATABASE_URL="postgres://u@db.example:5433/gw", SECRET_KEY="k")
    assert s["engine"] == "django.db.backends.postgresql"
    assert (s["db_name"], s["db_host"]) == ("gw", "db.example")
    assert s["demo"] is False


def test_redis_url_switches_celery_and_channels_to_redis(tmp_path):
    s = settings_for(tmp_path, REDIS_URL="redis://cache.example:6380/2", SECRET_KEY="k")
    assert s["layer"] == "channels_redis.core.RedisChannelLayer"
    assert s["broker"] == "redis://cache.example:6380/2" and s["eager"] is False


# Each of these points gangweb at something real; beside any of them the built-in key is never used.
PRODUCTION_PARTS = {
    "DATABASE_URL": {"DATABASE_URL": "postgres://u@db.example/gw"},
    "REDIS_URL": {"REDIS_URL": "redis://cache.example:6379/0"},
    "KUBECONFIG": {"KUBECONFIG": "/nonexistent/kubeconfig"},
    "KUBERNETES_SERVICE_HOST": {"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
    "GANGWEB_CLUSTER=kube": {"GANGWEB_CLUSTER": "kube"},
}


def test_outside_the_demo_a_secret_key_is_required(tmp_path):
    result = load_settings(tmp_path, DATABASE_URL="postgres://u@db.example/gw")
    assert "SECRET_KEY is required" in error_line(result)


@pytest.mark.parametrize("part", PRODUCTION_PARTS)
@pytest.mark.parametrize(
    "extra",
    [{}, {"DEBUG": "1"}, {"DEBUG": "1", "GANGWEB_DEMO": "0"}],
    ids=["plain", "debug", "debug-demo-off"],
)
def test_beside_a_production_part_no_key_is_an_error_that_says_to_set_secret_key(tmp_path, part, extra):
    line = error_line(load_settings(tmp_path, **PRODUCTION_PARTS[part], **extra))
    assert line.startswith("django.core.exceptions.ImproperlyConfigured: SECRET_KEY is required"), line
    assert part in line and "set SECRET_KEY" in line
    assert "GANGWEB_DEMO" not in line  # the old advice, which also opened reads to anonymous users


@pytest.mark.parametrize("part", PRODUCTION_PARTS)
@pytest.mark.parametrize("key", [{}, {"SECRET_KEY": "k"}], ids=["no-key", "with-key"])
def test_gangweb_demo_beside_a_production_part_refuses_to_start(tmp_path, part, key):
    """GANGWEB_DEMO=1 would open the dashboard and API reads to anonymous users: never beside real parts."""
    line = error_line(load_settings(tmp_path, GANGWEB_DEMO="1", **PRODUCTION_PARTS[part], **key))
    assert f"GANGWEB_DEMO=1 cannot run beside {part}" in line, line
    assert "without a login" in line and "set SECRET_KEY" in line


def test_debug_alone_is_still_the_demo_and_demo_off_alone_needs_a_key(tmp_path):
    s = settings_for(tmp_path, DEBUG="1")
    assert s["debug"] is True and s["demo"] is True and s["demo_key"] is True
    line = error_line(load_settings(tmp_path, GANGWEB_DEMO="0"))
    assert "SECRET_KEY is required" in line and "GANGWEB_DEMO" not in line


def test_the_public_key_given_as_secret_key_is_refused_outside_the_demo(tmp_path):
    public = "gangweb-demo-insecure-key-do-not-use-in-production"
    line = error_line(load_settings(tmp_path, DATABASE_URL="postgres://u@db.example/gw", SECRET_KEY=public))
    assert "public built-in key" in line


def test_a_test_process_beside_real_services_gets_a_key_of_its_own(tmp_path):
    """pytest loads settings before its conftest can set SECRET_KEY; that key is random, never the public one."""
    first = settings_for_probe(tmp_path, "import pytest\n" + PROBE, DATABASE_URL="postgres://u@db.example/gw")
    second = settings_for_probe(
        tmp_path, "import pytest\n" + PROBE, DATABASE_URL="postgres://u@db.example/gw"
    )
    assert first["demo"] is False and first["demo_key"] is False
    assert first["key"] != second["key"] and len(first["key"]) >= 50


def settings_for_probe(tmp_path, probe: str, **env: str) -> dict:
    result = load_settings(tmp_path, probe, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_allowed_hosts_debug_and_modes_come_from_the_environment(tmp_path):
    s = settings_for(
        tmp_path,
        ALLOWED_HOSTS="gangweb.example.com, .svc",
        DEBUG="true",
        GANGWEB_MODE="observe",
        GANGWEB_NAMESPACE_MODES="team-a=enforce,team-b=observe",
        KUBECONFIG="/nonexistent/kubeconfig",
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
        (
            {"GANGWEB_MODE": "chaos"},
            "GANGWEB_MODE must be one of 'enforce', 'observe', 'approve', got 'chaos'",
        ),
        ({"GANGWEB_CLUSTER": "k8s"}, "GANGWEB_CLUSTER must be one of 'simulated', 'kube'"),
        ({"GANGWEB_PDB_POLICY": "ignore"}, "GANGWEB_PDB_POLICY must be one of 'respect', 'delete'"),
        ({"GANGWEB_SIM_DEVICES": "mig"}, "GANGWEB_SIM_DEVICES must be one of 'extended', 'dra'"),
        (
            {"GANGWEB_SIM_QUEUES": "slurm"},
            "GANGWEB_SIM_QUEUES must be one of 'none', 'kueue', 'volcano', 'kai', 'yunikorn'",
        ),
        ({"GANGWEB_DISRUPTION_MODE": "some"}, "GANGWEB_DISRUPTION_MODE must be one of 'all', 'single'"),
        ({"GANGWEB_NAMESPACE_MODES": "team-a:observe"}, "GANGWEB_NAMESPACE_MODES entries"),
        ({"GANGWEB_SIM_NODES": "many"}, "GANGWEB_SIM_NODES must be an integer"),
        ({"GANGWEB_NAMESPACE_DISRUPTION_MODES": "team-a=some"}, "GANGWEB_NAMESPACE_DISRUPTION_MODES entries"),
        ({"GANGWEB_SIM_TICK_SECONDS": "soon"}, "GANGWEB_SIM_TICK_SECONDS must be a number"),
        (
            {"GANGWEB_LOST_WORK_BUDGET_GPU_HOURS": "-1"},
            "GANGWEB_LOST_WORK_BUDGET_GPU_HOURS must be a number 0 or more, got '-1'",
        ),
        (
            {"GANGWEB_NAMESPACE_LOST_WORK_BUDGETS": "team-a=lots"},
            "GANGWEB_NAMESPACE_LOST_WORK_BUDGETS entries look like 'team-a=4'",
        ),
        (
            {"GANGWEB_QUEUE_LOST_WORK_BUDGETS": "volcano/q1=-2"},
            "GANGWEB_QUEUE_LOST_WORK_BUDGETS entries look like 'volcano/q1=2' with a number 0 or more, "
            "got 'volcano/q1=-2'",
        ),
        (
            {"GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS": "team-a=-600"},
            "GANGWEB_NAMESPACE_CHECKPOINT_INTERVALS entries look like 'team-a=4'",
        ),
        (
            {"GANGWEB_CHECKPOINT_INTERVAL_SECONDS": "often"},
            "GANGWEB_CHECKPOINT_INTERVAL_SECONDS must be a number",
        ),
    ],
)
def test_bad_values_fail_with_a_message_naming_the_variable(tmp_path, env, message):
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr


def _manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in CONTROLLED}
    clean.update({"GANGWEB_VAR_DIR": str(tmp_path / "var")}, **env)
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


# A shell where kubectl works (KUBECONFIG) and the ledger's database is named but out of reach.
BESIDE_A_CLUSTER = {
    "KUBECONFIG": "/nonexistent/kubeconfig",
    "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
}


def test_gang_plan_on_a_dump_needs_no_secret_key_and_no_database(tmp_path):
    done = _manage(
        tmp_path,
        "gang",
        "plan",
        "--snapshot",
        str(ROOT / "tests/fixtures/engine/two-racks.yaml"),
        "--podgroup",
        "ml/train-a",
        **BESIDE_A_CLUSTER,
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert json.loads(done.stdout)["podGroup"] == "ml/train-a"
    assert not (tmp_path / "var").exists()  # no SQLite file made either


def test_gang_help_and_bench_engine_are_offline_too(tmp_path):
    assert _manage(tmp_path, "gang", "--help", **BESIDE_A_CLUSTER).returncode == 0
    done = _manage(tmp_path, "bench", "engine", "--help", **BESIDE_A_CLUSTER)
    assert done.returncode == 0, done.stderr[-800:]


@pytest.mark.parametrize("args", [("access", "list"), ("bench", "api", "--help"), ("migrate",)])
def test_commands_that_serve_or_store_still_need_a_secret_key(tmp_path, args):
    done = _manage(tmp_path, *args, **BESIDE_A_CLUSTER)
    assert done.returncode != 0
    assert "SECRET_KEY is required" in done.stderr.strip().splitlines()[-1]
