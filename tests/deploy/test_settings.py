"""Every environment variable gangweb reads is wired in deploy/ (the ConfigMap, the Secret, or a
container's own env) or deliberately left out, with the reason here and in docs/install.md; and what the
overlays set is accepted by gangweb/settings.py as a deployed process reads it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.deploy.rendering import PROCESSES, config_data, pod_spec

# Read by the code, not set by deploy/, and why. (KUBECONFIG unset and KUBERNETES_SERVICE_HOST set by the
# kubelet is how a pod finds the in-cluster service account.)
LEFT_OUT = {
    "KUBECONFIG": "unset in the cluster: the processes use their pod's ServiceAccount",
    "KUBERNETES_SERVICE_HOST": "set in every pod by the kubelet (it is how gangweb knows it runs in a cluster)",
    "GANGWEB_SIM_NODES": "the simulated cluster only (the demo); deploy/ runs GANGWEB_CLUSTER=kube",
    "GANGWEB_SIM_SEED": "the simulated cluster only",
    "GANGWEB_SIM_TICK_SECONDS": "the simulated cluster only",
    "GANGWEB_SIM_DEVICES": "the simulated cluster only (its GPUs as extended resources or DRA devices)",
    "GANGWEB_SIM_LOSS_TICKS": "the simulated cluster only (its gangs that lose a member)",
    "GANGWEB_SIM_QUEUES": "the simulated cluster only (the queue manager its team namespaces run under)",
    "GANGWEB_PROMETHEUS_TOKEN": "a credential: set it from a Secret of your own when your Prometheus wants one",
    "GANGWEB_SCHEDULER_METRICS_TOKEN": "a credential: set it from a Secret of your own when kube-scheduler wants one",
    "GANGWEB_CELERY_LOG_LEVEL": "defaults to LOG_LEVEL outside the demo (WARNING only in the demo)",
    "GANGWEB_HOST": "`manage.py demo` only",
    "GANGWEB_PORT": "`manage.py demo` only",
    "GANGWEB_DEMO_SCENE_SECONDS": "`manage.py demo` only (when its scripted preemption scene starts)",
    "GANGWEB_ADMIN_PASSWORD": "`manage.py demo` only (its own SQLite); create users with `manage.py createsuperuser`",
    "GANGWEB_SNAPSHOT_MAX_BYTES": "`gang plan` on the command line only; its default (256 MiB) holds 50,000 nodes",
    "XDG_DATA_HOME": "an installed package's default GANGWEB_VAR_DIR outside a checkout; deploy/ sets GANGWEB_VAR_DIR",
    "GANGWEB_SERVER": "`kubectl gangweb` on the user's machine: gangweb's URL (docs/cli.md)",
    "GANGWEB_TOKEN": "`kubectl gangweb` on the user's machine: a token instead of the kubeconfig's",
    "OTEL_SERVICE_NAME": "traces are off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; then name each Deployment",
    "GANGWEB_REPLAY_DIR": "`gang replay --plots` output for the /replay/ page; its default under GANGWEB_VAR_DIR is empty",
}
SECRET_KEYS = {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"}
READ = re.compile(
    r"(?:os\.environ\.get|os\.getenv|env_bool|env_int|env_float|env_optional_float|env_choice|env_list|env_namespace_map|env_namespace_numbers|env_networks|_env_path)\(\s*\"([A-Z][A-Z0-9_]+)\""
    r"|_ENV\s*=\s*\"([A-Z][A-Z0-9_]+)\""
)


def variables_read() -> set[str]:
    names = set()
    for package in ("gangweb", "scheduler", "admission"):
        for path in (ROOT / package).rglob("*.py"):
            for match in READ.finditer(path.read_text()):
                names.add(match.group(1) or match.group(2))
    return names


def wired(objects: list[dict]) -> set[str]:
    names = set(config_data(objects))
    for process in PROCESSES:
        pod = pod_spec(objects, process)
        for container in pod.get("initContainers", []) + pod["containers"]:
            names |= {e["name"] for e in container.get("env", [])}
    return names


def test_the_scan_finds_the_settings_it_must():
    read = variables_read()
    assert {"GANGWEB_MODE", "DATABASE_URL", "GANGWEB_WEBHOOK_CLIENT_CA", "GANGWEB_SNAPSHOT_MAX_BYTES"} <= read
    assert len(read) > 35


def test_every_setting_is_wired_or_deliberately_left_out(rendered):
    read, deployed = variables_read(), wired(rendered["enforce"])
    missing = sorted(read - deployed - set(LEFT_OUT))
    assert not missing, (
        f"read by gangweb but neither in deploy/base/configmap.yaml nor in LEFT_OUT: {missing}"
    )
    assert not set(LEFT_OUT) & deployed, "a setting is both wired and listed as left out"
    assert set(LEFT_OUT) <= read, f"LEFT_OUT names settings nothing reads: {sorted(set(LEFT_OUT) - read)}"
    assert not deployed - read, sorted(deployed - read)
    assert deployed >= SECRET_KEYS


def test_install_md_lists_every_setting_and_says_why_some_are_left_out():
    install = (ROOT / "docs" / "install.md").read_text()
    for name in variables_read():
        assert f"`{name}`" in install, f"docs/install.md does not mention {name}"


def test_secrets_come_from_the_secret_never_the_config_map(rendered):
    data = config_data(rendered["enforce"])
    assert not SECRET_KEYS & set(data)
    for process in PROCESSES:
        pod = pod_spec(rendered["enforce"], process)
        for container in pod.get("initContainers", []) + pod["containers"]:
            for entry in container.get("env", []):
                if entry["name"] in SECRET_KEYS:
                    assert entry["valueFrom"]["secretKeyRef"]["name"] == "gangweb-secrets"


SHOW = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'mode': s.GANGWEB_MODE, 'cluster': s.GANGWEB_CLUSTER, 'demo': s.DEMO, "
    "'namespace': s.GANGWEB_NAMESPACE, 'var': str(s.VAR_DIR), 'hosts': s.ALLOWED_HOSTS, "
    "'secure': s.SESSION_COOKIE_SECURE}))"
)


@pytest.mark.parametrize(
    "overlay, mode", [("observe", "observe"), ("enforce", "enforce"), ("quickstart", "observe")]
)
def test_gangweb_starts_on_what_the_overlay_sets(rendered, tmp_path, overlay, mode):
    data = config_data(rendered[overlay])
    var = tmp_path / "var"
    env = {
        **data,
        "GANGWEB_VAR_DIR": str(var),
        "SECRET_KEY": "deploy-test-only",
        "DATABASE_URL": "postgres://gangweb@127.0.0.1:1/gangweb",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",  # as in a pod
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "gangweb.settings",
    }
    done = subprocess.run([sys.executable, "-c", SHOW], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    shown = json.loads(done.stdout)
    assert shown["mode"] == mode and shown["cluster"] == "kube" and shown["demo"] is False
    assert shown["namespace"] == "gangweb-system" and shown["secure"] is True
    assert "gangweb-web.gangweb-system.svc" in shown["hosts"] and "localhost" in shown["hosts"]
