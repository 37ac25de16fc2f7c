"""Why a gang waits: one dominant blocker with a stable code and numbers; a quota wait is never a capacity
wait."""

import json
import subprocess
import sys
from pathlib import Path

from scheduler.engine import parse_snapshot, plan
from scheduler.engine.builders import node, pod, podgroup
from scheduler.queues import queues_from
from scheduler.queues.blockers import CODES, blocker_for
from scheduler.queues.cluster import build_reading

from .conftest import FIXTURES, load_objects

ROOT = Path(__file__).resolve().parents[3]


def _blocker(objects, key, planned=True):
    snapshot = parse_snapshot(objects)
    reading = build_reading(objects, snapshot)
    result = plan(snapshot, key) if planned else None
    return blocker_for(queues_from(reading), reading, snapshot, key, result)


def test_gang_plan_says_quota_with_numbers_for_a_kueue_wait():
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "gang",
            "plan",
            "--snapshot",
            str(FIXTURES / "kueue.yaml"),
            "--podgroup",
            "team-b/train-b",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["blocker"]["code"] == "quota"
    assert result["blocker"]["reason"] == (
        "ClusterQueue team-b: needs 16 GPUs; 8 free under nominal 16; 8 lent to other queues"
    )
    assert result["blocker"]["numbers"]["canTake"] == 8 and result["blocker"]["numbers"]["needs"] == 16
    assert list(result)[-5:] == ["blocker", "outcome", "optimality", "cost", "notice"]


def test_volcano_capability_is_a_quota_wait():
    found = _blocker(load_objects("volcano"), "ml/train-r2", planned=False)
    assert found.code == "quota" and found.numbers["queue"] == "research" and found.numbers["canTake"] == 8


def test_a_queue_that_does_not_exist_is_configuration():
    objects = load_objects("volcano")
    for obj in objects:
        if obj["kind"] == "PodGroup" and obj["metadata"]["name"] == "train-r2":
            obj["spec"]["queue"] = "nonexistent"
    assert _blocker(objects, "ml/train-r2", planned=False).code == "configuration"


def test_too_few_pods_is_quorum():
    objects = [node("n1"), podgroup("g", min_count=3, priority=10), pod("g-0", group="g", gpus=1)]
    found = _blocker(objects, "default/g")
    assert found.code == "quorum" and found.numbers == {"pods": 1, "minCount": 3}


def test_a_gang_outside_any_queue_waits_for_capacity():
    objects = [node("n1"), podgroup("g", min_count=2, priority=10)]
    objects += [pod(f"g-{i}", group="g", gpus=8) for i in range(2)]
    found = _blocker(objects, "default/g")
    assert found.code == "capacity" and found.numbers["needs"] == 16 and found.numbers["free"] == 8


def test_codes_are_documented():
    text = (ROOT / "docs" / "queues.md").read_text()
    assert all(f"`{code}`" in text for code in CODES)
