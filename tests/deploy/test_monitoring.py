"""The monitoring pack (deploy/components/monitoring) as Prometheus and Grafana read it: the rules load and
every alert behaves as its unit tests say (``promtool``), every metric a rule or a panel names is one the
code exports, each PodMonitor scrapes a port its pods serve, and the dashboards reach Grafana's sidecar."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy.rendering import DEPLOY, find, one, workloads

MONITORING = DEPLOY / "components" / "monitoring"
METRIC = re.compile(r"\bgangweb_[a-z0-9_]+\b")


def promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        pytest.fail(
            "promtool is not installed: `apt-get install -y prometheus` (scripts/test.sh does it as root)"
        )
    return found


def rule_groups() -> list[dict]:
    return yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]["groups"]


def alerts() -> list[dict]:
    return [rule for group in rule_groups() for rule in group["rules"] if "alert" in rule]


def dashboards() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((MONITORING / "dashboards").glob("*.json"))}


def panel_expressions() -> list[str]:
    return [
        target["expr"]
        for board in dashboards().values()
        for panel in board["panels"]
        for target in panel.get("targets", [])
    ]


@pytest.fixture(scope="module")
def rules_dir(tmp_path_factory) -> Path:
    """The PrometheusRule's groups as a rules file, beside the unit tests that load it."""
    directory = tmp_path_factory.mktemp("rules")
    (directory / "gangweb.rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
    shutil.copy(MONITORING / "tests" / "rules-test.yaml", directory)
    return directory


def test_promtool_accepts_the_rules(rules_dir):
    done = subprocess.run(
        [promtool(), "check", "rules", "gangweb.rules.yaml"], cwd=rules_dir, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in rule_groups())} rules found" in done.stdout


def test_every_alert_passes_its_unit_tests(rules_dir):
    done = subprocess.run(
        [promtool(), "test", "rules", "rules-test.yaml"], cwd=rules_dir, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_unit_test_that_fires_it_and_one_that_does_not():
    tests = yaml.safe_load((MONITORING / "tests" / "rules-test.yaml").read_text())["tests"]
    cases = [case for test in tests for case in test.get("alert_rule_test", [])]
    for alert in alerts():
        mine = [case for case in cases if case["alertname"] == alert["alert"]]
        assert any(case["exp_alerts"] for case in mine), f"{alert['alert']}: no test where it fires"
        assert any(not case["exp_alerts"] for case in mine), f"{alert['alert']}: no test where it stays quiet"


def test_the_alerts_the_issue_asks_for_exist():
    names = {alert["alert"] for alert in alerts()}
    assert {
        "GangwebWebhookDown",
        "GangwebWebhookErrors",
        "GangwebAdmissionSlow",
        "GangwebPreemptionsFailing",
        "GangwebGangsWaitingLong",
        "GangwebApprovalsWaiting",
    } <= names
    for alert in alerts():
        assert alert["labels"]["severity"] in ("critical", "warning", "info"), alert["alert"]
        assert alert["annotations"]["summary"] and alert["annotations"]["description"], alert["alert"]


def exported_samples(registry) -> set[str]:
    """The sample names a registry's families produce, from each family's type (a labelled family with no
    child yet has no samples)."""
    suffixes = {
        "counter": ("_total",),
        "gauge": ("",),
        "histogram": ("_bucket", "_sum", "_count"),
        "summary": ("", "_sum", "_count"),
        "info": ("_info",),
    }
    return {
        family.name + suffix for family in registry.collect() for suffix in suffixes.get(family.type, ("",))
    }


def role_registries() -> dict[str, object]:
    from admission.metrics import REGISTRY as WEBHOOK
    from gangweb.metrics import REGISTRY as WEB
    from scheduler.preemption.metrics import REGISTRY as WORKER

    return {"gangweb-web": WEB, "gangweb-worker": WORKER, "gangweb-webhook": WEBHOOK}


@pytest.mark.django_db
def test_each_process_role_exports_only_its_own_families():
    samples = {role: exported_samples(r) for role, r in role_registries().items()}
    own = {role: {s for s in names if s.startswith("gangweb_")} for role, names in samples.items()}
    assert all(own.values()), own
    assert not own["gangweb-web"] & own["gangweb-worker"]
    assert not own["gangweb-web"] & own["gangweb-webhook"]
    assert not own["gangweb-worker"] & own["gangweb-webhook"]
    assert all(s.startswith("gangweb_admission_") for s in own["gangweb-webhook"])
    assert all(s.startswith(("gangweb_podgroup_preemption_", "gangweb_idle_")) for s in own["gangweb-worker"])


@pytest.mark.django_db
def test_every_metric_a_rule_or_a_panel_names_is_one_the_code_exports():
    exported = set().union(*(exported_samples(r) for r in role_registries().values()))
    expressions = [alert["expr"] for alert in alerts()] + panel_expressions()
    named = {name for expr in expressions for name in METRIC.findall(expr)}
    assert len(named) > 15
    assert not named - exported, f"named but not exported: {sorted(named - exported)}"


def test_the_jobs_rules_and_panels_name_are_the_podmonitors():
    monitors = list(yaml.safe_load_all((MONITORING / "podmonitors.yaml").read_text()))
    jobs = {
        relabel["replacement"]
        for monitor in monitors
        for endpoint in monitor["spec"]["podMetricsEndpoints"]
        for relabel in endpoint.get("relabelings", [])
        if relabel["targetLabel"] == "job"
    }
    assert jobs == set(role_registries())
    expressions = [alert["expr"] for alert in alerts()] + panel_expressions()
    for expr in expressions:
        for job in re.findall(r'job="([^"]+)"', expr):
            assert job in jobs, expr


def test_each_podmonitor_scrapes_a_port_its_pods_serve_and_never_the_dashboards(rendered):
    objects = rendered["observe-monitoring"]
    monitors = find(objects, "PodMonitor")
    assert {m["metadata"]["name"] for m in monitors} == {"gangweb-web", "gangweb-worker", "gangweb-webhook"}
    for monitor in monitors:
        selector = monitor["spec"]["selector"]["matchLabels"]
        (workload,) = [
            w
            for w in workloads(objects)
            if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()
        ]
        ports = {
            p["name"]: p["containerPort"]
            for c in workload["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            assert endpoint["port"] in ports, (monitor["metadata"]["name"], endpoint["port"])
            assert endpoint["port"] != "http"  # the dashboard's public port
    (rule,) = find(objects, "PrometheusRule")
    assert rule["spec"]["groups"] == rule_groups()


def test_the_dashboards_reach_grafanas_sidecar(rendered):
    objects = rendered["observe-monitoring"]
    config = one(objects, "ConfigMap", "gangweb-dashboards")
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    boards = {name.removesuffix(".json"): json.loads(text) for name, text in config["data"].items()}
    assert set(boards) == {
        "gangweb-overview",
        "gangweb-preemptions",
        "gangweb-admission",
        "gangweb-idle-gpus",
    }
    uids = [board["uid"] for board in boards.values()]
    assert len(set(uids)) == len(uids)
    for board in boards.values():
        assert board["panels"] and all(panel["targets"] for panel in board["panels"])
