"""A kubectl-shaped snapshot (tests/fixtures/engine/two-racks.yaml) through the CLI and the API."""

import json
import subprocess
import sys
from pathlib import Path

import yaml

from scheduler.engine import load_snapshot, parse_snapshot, plan

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "engine" / "two-racks.yaml"


def _cli(policy):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "gang",
            "plan",
            "--snapshot",
            str(FIXTURE),
            "--podgroup",
            "ml/llm-ft",
            "--policy",
            policy,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_kep5710_is_stuck_with_the_first_rack_gangweb_takes_the_cheap_one():
    kep, ours = _cli("kep5710"), _cli("gangweb")
    assert kep["domain"] == "rack-0" and [v["name"] for v in kep["victims"]] == ["train-a"]
    assert ours["domain"] == "rack-1"
    assert ours["evictions"] == ["ml/sweep-0", "ml/sweep-1", "web/serve-0", "web/serve-1"]
    assert {v["priority"] for v in ours["victims"]} == {100}
    assert sorted(ours["placement"].values()) == ["gpu-4", "gpu-5", "gpu-6", "gpu-7"]
    assert "kep5710 would evict 1 unit, highest priority 500" in ours["reason"]


def test_a_tighter_budget_makes_the_dear_rack_the_cheaper_plan():
    document = yaml.safe_load(FIXTURE.read_text())
    for item in document["items"]:
        if item["kind"] == "PodDisruptionBudget":
            item["status"]["disruptionsAllowed"] = 1
    result = plan(parse_snapshot([document]), "ml/llm-ft")
    # Evicting both serve replicas would break the budget: PDB violations come first in the cost order.
    assert result.domain == "rack-0" and result.pdb_violations == 0
    assert plan(load_snapshot(str(FIXTURE)), "ml/llm-ft").cost < result.cost
