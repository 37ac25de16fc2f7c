"""``-o/--output json|yaml|table|wide`` on the manage.py commands that print data, the old ``--json`` kept."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT

SNAPSHOT = str(ROOT / "tests/fixtures/engine/two-racks.yaml")
PLAN = ("gang", "plan", "--snapshot", SNAPSHOT, "--podgroup", "ml/llm-ft")
REPLAY = ("gang", "replay", "--hours", "0.2", "--nodes", "10", "--policies", "gangweb")
BENCH = ("bench", "engine", "--nodes", "50", "--repeats", "1")


def manage(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-800:]
    return done


def test_gang_plan_prints_the_contract_json_by_default_and_the_same_object_in_yaml():
    plain = json.loads(manage(*PLAN).stdout)
    assert json.loads(manage(*PLAN, "-o", "json").stdout) == plain
    assert yaml.safe_load(manage(*PLAN, "--output", "yaml").stdout) == plain


def test_gang_plan_as_a_table_has_the_plugins_columns():
    plan = json.loads(manage(*PLAN).stdout)
    header, row = manage(*PLAN, "-o", "table").stdout.splitlines()
    assert header.split() == [
        "POLICY",
        "FEASIBLE",
        "OUTCOME",
        "DOMAIN",
        "EVICTED-PODS",
        "EVICTED-GPUS",
        "VICTIM-UNITS",
    ]
    assert row.split()[4:] == [str(plan["cost"][k]) for k in ("evictedPods", "evictedGpus", "victimUnits")]
    wide = manage(*PLAN, "-o", "wide").stdout.splitlines()[0].split()
    assert wide[7:9] == ["PDB-VIOLATIONS", "LOST-GPU-SECONDS"]


@pytest.mark.parametrize("command", [REPLAY, BENCH], ids=["gang replay", "bench engine"])
def test_json_is_kept_as_an_alias_and_yaml_is_the_same_object(command):
    old = json.loads(manage(*command, "--json").stdout)
    new = json.loads(manage(*command, "-o", "json").stdout)
    as_yaml = yaml.safe_load(manage(*command, "-o", "yaml").stdout)
    # Wall-time fields differ between runs; the keys and the workload do not.
    assert set(old) == set(new) == set(as_yaml)
    if "workload" in old:
        assert old["workload"] == new["workload"] == as_yaml["workload"]


def test_webhook_config_takes_o_as_kubectl_does(tmp_path):
    manage("webhook", "certs", "--dir", str(tmp_path))
    ca = str(tmp_path / "ca.crt")
    assert json.loads(manage("webhook", "config", "--ca-file", ca, "-o", "json").stdout)["kind"] == "List"
