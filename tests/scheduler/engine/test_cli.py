"""``python manage.py gang plan`` as a user runs it: JSON on stdout, or exit 2 and one line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scheduler.engine.builders import as_list, node, pod, podgroup

from .bombs import BILLION_LAUGHS, LIST_BOMB

ROOT = Path(__file__).resolve().parents[3]


def gang_plan(*args, timeout=60, cwd=ROOT, env=None, stdin=None):
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "gang", "plan", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=stdin,
        env=None if env is None else {**os.environ, **env},
    )


def _objects():
    return [
        node("n1"),
        podgroup("g", min_count=1, priority=100),
        pod("g-0", group="g", gpus=8),
        pod("low", node="n1", gpus=8, priority=1),
    ]


def _write(tmp_path, content, name="snapshot.yaml"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump_all(content))
    return str(path)


def test_plan_prints_the_contract_json(tmp_path):
    done = gang_plan(
        "--snapshot",
        _write(tmp_path, json.dumps(as_list(_objects())), "s.json"),
        "--podgroup",
        "default/g",
        "--policy",
        "kep5710",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data == {
        "podGroup": "default/g",
        "policy": "kep5710",
        "feasible": True,
        "victims": [
            {
                "kind": "Pod",
                "namespace": "default",
                "name": "low",
                "priority": 1,
                "pods": ["default/low"],
                "lostGpuSeconds": data["cost"]["lostGpuSeconds"],
            }
        ],
        "evictions": ["default/low"],
        "placement": {"default/g-0": "n1"},
        "domain": None,
        "reason": data["reason"],
        # Why the gang waits (docs/queues.md): nothing but room it can take, so no blocker.
        "blocker": None,
        "outcome": "preempt",
        # kep5710 does not search exactly (gangweb would say "proven" here).
        "optimality": "heuristic:policy",
        # The API's cost block (docs/design.md "API v1", "Cost"): one pod of priority 1 on 8 GPUs.
        "cost": {
            "pdbViolations": 0,
            "maxVictimPriority": 1,
            "victimPrioritySum": 1,
            "victimUnits": 1,
            "evictedPods": 1,
            "evictedGpus": 8,
            "lostGpuSeconds": data["cost"]["lostGpuSeconds"],
        },
        # No notice: GANGWEB_PREEMPTION_NOTICE_SECONDS is 0 and none runs on the victim.
        "notice": None,
    }
    # After the docs/design.md keys, which keep their order.
    assert list(data)[-4:] == ["outcome", "optimality", "cost", "notice"]
    assert data["reason"] and "\n" not in data["reason"]


def test_plan_says_the_notice_its_victims_get_and_the_deadline_of_one_running(tmp_path):
    objects = _objects()
    snapshot = _write(tmp_path, objects)
    env = {"GANGWEB_NAMESPACE_PREEMPTION_NOTICE_SECONDS": "default=120,other=600"}
    assert json.loads(gang_plan("--snapshot", snapshot, "--podgroup", "default/g", env=env).stdout)[
        "notice"
    ] == {
        "seconds": 120,
        "deadline": None,
    }
    objects[3]["metadata"]["annotations"] = {"gangweb.io/preemption-deadline": "2026-12-02T06:00:00Z"}
    done = gang_plan("--snapshot", _write(tmp_path, objects), "--podgroup", "default/g")
    assert json.loads(done.stdout)["notice"] == {"seconds": 0, "deadline": "2026-12-02T06:00:00Z"}


def test_infeasible_plan_still_exits_zero(tmp_path):
    objects = _objects()
    objects[3]["spec"]["priority"] = 1000
    done = gang_plan("--snapshot", _write(tmp_path, objects), "--podgroup", "default/g")
    assert done.returncode == 0 and json.loads(done.stdout)["feasible"] is False


def _mutated(change):
    objects = _objects()
    change(objects)
    return objects


BAD_SNAPSHOTS = {
    "not yaml": ("kind: [oops\n", "not valid YAML/JSON"),
    "empty file": ("", "empty"),
    "scalar document": ("42\n", "object #1"),
    "items not a list": (json.dumps({"kind": "List", "items": {"a": 1}}), "items: expected a list"),
    "object without kind": (_mutated(lambda o: o.append({"metadata": {"name": "x"}})), "kind: required"),
    "node without name": (_mutated(lambda o: o[0]["metadata"].pop("name")), "Node #1 (no metadata.name)"),
    "bad allocatable": (
        _mutated(lambda o: o[0]["status"]["allocatable"].update({"nvidia.com/gpu": "eight"})),
        "Node n1: status.allocatable.nvidia.com/gpu",
    ),
    "bad request": (
        _mutated(lambda o: o[2]["spec"]["containers"][0]["resources"]["requests"].update({"cpu": "1x"})),
        "Pod default/g-0: spec.containers[0].resources.requests.cpu",
    ),
    "containers not a list": (
        _mutated(lambda o: o[2]["spec"].update({"containers": {"name": "c"}})),
        "Pod default/g-0: spec.containers",
    ),
    "container not an object": (
        _mutated(lambda o: o[2]["spec"].update({"containers": ["c"]})),
        "Pod default/g-0: spec.containers[0]",
    ),
    "spec not an object": (_mutated(lambda o: o[3].update({"spec": "running"})), "Pod default/low: spec"),
    "metadata not an object": (
        _mutated(lambda o: o[3].update({"metadata": "low"})),
        "Pod #4 (no metadata.name)",
    ),
    "group without policy": (
        _mutated(lambda o: o[1]["spec"].pop("schedulingPolicy")),
        "PodGroup default/g: spec.schedulingPolicy",
    ),
    "minCount not a number": (
        _mutated(lambda o: o[1]["spec"].update({"schedulingPolicy": {"gang": {"minCount": "two"}}})),
        "PodGroup default/g: spec.schedulingPolicy.gang.minCount",
    ),
    "priority not a number": (
        _mutated(lambda o: o[1]["spec"].update({"priority": "high"})),
        "PodGroup default/g: spec.priority",
    ),
    "bad start time": (
        _mutated(lambda o: o[3]["status"].update({"startTime": 12})),
        "Pod default/low: status.startTime",
    ),
    "bad taint": (_mutated(lambda o: o[0]["spec"].update({"taints": ["gpu"]})), "Node n1: spec.taints[0]"),
    "duplicate": (_mutated(lambda o: o.append(pod("low", node="n1"))), "Pod default/low: appears twice"),
}


@pytest.mark.parametrize("case", sorted(BAD_SNAPSHOTS))
def test_bad_snapshots_exit_2_with_one_line_naming_the_object(tmp_path, case):
    content, expected = BAD_SNAPSHOTS[case]
    done = gang_plan("--snapshot", _write(tmp_path, content), "--podgroup", "default/g")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--podgroup", "default/g"], "--snapshot"),
        (["--snapshot", "/nonexistent.yaml", "--podgroup", "default/g"], "not found"),
        (["--snapshot", "SNAP", "--podgroup", "default/missing"], "PodGroup default/missing not found"),
        (["--snapshot", "SNAP", "--podgroup", "no-namespace"], "NAMESPACE/NAME"),
        (["--snapshot", "SNAP", "--podgroup", "default/g", "--policy", "greedy"], "unknown policy"),
        (["--snapshot", "DIR", "--podgroup", "default/g"], "cannot read snapshot"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, args, expected):
    snapshot = _write(tmp_path, _objects())
    args = [snapshot if a == "SNAP" else str(tmp_path) if a == "DIR" else a for a in args]
    done = gang_plan(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr


def test_snapshot_from_standard_input():
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "gang",
            "plan",
            "--snapshot",
            "-",
            "--podgroup",
            "default/g",
        ],
        cwd=ROOT,
        input=json.dumps(as_list(_objects())),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["evictions"] == ["default/low"]


@pytest.mark.parametrize("content", ["[" * 100_000 + "]" * 100_000, "[" * 5_000 + "]" * 5_000 + "\n"])
def test_deeply_nested_snapshot_exits_2_with_one_line(tmp_path, content):
    done = gang_plan("--snapshot", _write(tmp_path, content), "--podgroup", "ml/new")
    assert done.returncode == 2, done.stderr[-500:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-500:]


_BROKEN_ENGINE = """
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gangweb.settings")
import django; django.setup()
import gangweb.management.commands.gang as command
def broken(*args, **kwargs):
    raise KeyError("engine bug")
command.plan_beside_queues = broken  # the planning seam of gang plan
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", "gang", "plan", *sys.argv[1:]])
"""


def test_an_engine_bug_exits_2_naming_the_exception_and_debug_shows_the_traceback(tmp_path):
    snapshot = _write(tmp_path, _objects())

    def run(*extra):
        return subprocess.run(
            [sys.executable, "-c", _BROKEN_ENGINE, "--snapshot", snapshot, "--podgroup", "default/g", *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = run()
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "KeyError" in lines[0] and "engine bug" in lines[0] and "--debug" in lines[0]
    ), done.stderr
    debugged = run("--debug")
    assert debugged.returncode != 0 and "Traceback" in debugged.stderr and "engine bug" in debugged.stderr


def test_standard_input_that_is_not_utf8_is_bad_input():
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "gang",
            "plan",
            "--snapshot",
            "-",
            "--podgroup",
            "default/g",
        ],
        cwd=ROOT,
        input=b"\xff\xfe\x00kind: Node\n",
        capture_output=True,
        timeout=60,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 2 and len(stderr.strip().splitlines()) == 1
    assert "standard input is not UTF-8 text" in stderr and "engine bug" not in stderr, stderr


def _bomb(tmp_path, case):
    """(--snapshot argument, extra environment, words the one line must hold) of each bomb."""
    if case == "billion laughs":
        return _write(tmp_path, BILLION_LAUGHS), {}, "YAML aliases repeat more than 1,000,000 nodes"
    if case == "aliased List":
        return _write(tmp_path, LIST_BOMB), {}, "YAML aliases repeat more than 1,000,000 nodes"
    if case == "/dev/zero":
        return "/dev/zero", {}, "it is a character device, not a regular file"
    if case == "FIFO without a writer":
        os.mkfifo(tmp_path / "fifo.yaml")
        return str(tmp_path / "fifo.yaml"), {}, "it is a FIFO (named pipe), not a regular file"
    if case == "over the cap":
        return (
            _write(tmp_path, _objects()),
            {"GANGWEB_SNAPSHOT_MAX_BYTES": "100"},
            "larger than the 100-byte limit",
        )
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case", ["billion laughs", "aliased List", "/dev/zero", "FIFO without a writer", "over the cap"]
)
def test_each_bomb_exits_2_in_one_line_naming_the_file_within_seconds(tmp_path, case):
    source, env, expected = _bomb(tmp_path, case)
    done = gang_plan(
        "--snapshot", source, "--podgroup", "default/g", env=env, timeout=20
    )  # generous: CI is loaded
    assert done.returncode == 2, done.stderr[-500:]
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and f"snapshot file {source}" in lines[0], done.stderr[
        -500:
    ]


def test_endless_standard_input_exits_2_at_the_cap():
    with open("/dev/zero", "rb") as zero:
        done = gang_plan(
            "--snapshot",
            "-",
            "--podgroup",
            "default/g",
            stdin=zero,
            timeout=20,
            env={"GANGWEB_SNAPSHOT_MAX_BYTES": str(2**20)},
        )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "snapshot on standard input is larger than the 1,048,576-byte limit" in lines[0]
    ), lines


def test_a_snapshot_file_named_like_json_text_is_read_as_a_json_file(tmp_path):
    (tmp_path / "[snap].json").write_text(json.dumps(as_list(_objects())))
    done = gang_plan("--snapshot", "[snap].json", "--podgroup", "default/g", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["evictions"] == ["default/low"]
