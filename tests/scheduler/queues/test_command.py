"""``python manage.py gang queues --snapshot FILE [--json]`` as the contract states it (docs/queues.md):
offline (no SECRET_KEY, no database), one JSON object with --json, a table without; bad input one line,
exit 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import FIXTURES, load_objects

ROOT = Path(__file__).resolve().parents[3]
QUEUE_KEYS = {"system", "kind", "name", "parent", "weight", "resources", "share", "pending"}
FIGURES = {"guaranteed", "limit", "used", "borrowed", "lent"}
# A shell beside a cluster whose ledger is out of reach: the command must not need any of it.
OFFLINE = {"KUBECONFIG": "/nonexistent/kubeconfig", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}


def gang_queues(*args, stdin=None):
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "GANGWEB_DEMO")}
    env.update(OFFLINE)
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "gang", "queues", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
    )


@pytest.mark.parametrize("system", ["kueue", "volcano", "kai", "yunikorn"])
def test_json_contract_per_system(system):
    done = gang_queues("--snapshot", str(FIXTURES / f"{system}.yaml"), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert list(data) == ["queues"] and data["queues"]
    for queue in data["queues"]:
        assert set(queue) == QUEUE_KEYS and queue["system"] == system
        assert set(queue["resources"]) <= {"gpu", "cpu", "memory"} and "gpu" in queue["resources"]
        for figures in queue["resources"].values():
            assert set(figures) == FIGURES
        assert "gangweb" in queue["share"]
        for entry in queue["pending"]:
            assert set(entry) == {"podGroup", "position"} and "/" in entry["podGroup"]


def test_table_names_every_queue():
    done = gang_queues("--snapshot", str(FIXTURES / "kai.yaml"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["SYSTEM", "KIND", "NAME"]
    assert {line.split()[2] for line in lines[1:]} == {"dept-ai", "team-vision", "team-nlp"}


def test_standard_input_and_a_cluster_without_queues():
    nodes_only = yaml.safe_dump_all([o for o in load_objects("kueue") if o["kind"] in ("Node", "Pod")])
    done = gang_queues("--snapshot", "-", "--json", stdin=nodes_only)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"queues": []}


def _bad_quota(tmp_path):
    objects = load_objects("kueue")
    for obj in objects:
        if obj["kind"] == "ClusterQueue" and obj["metadata"]["name"] == "team-b":
            obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = "lots"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: str(tmp / "missing.yaml"), "missing.yaml"),
        (lambda tmp: (tmp / "x.yaml").write_text("kind: [oops\n") and str(tmp / "x.yaml"), "YAML"),
        (_bad_quota, "ClusterQueue team-b"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, make, words):
    done = gang_queues("--snapshot", make(tmp_path), "--json")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gang: error:") and words in lines[0]
    assert done.stdout == ""
