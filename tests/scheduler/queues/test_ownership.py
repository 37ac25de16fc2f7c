"""Never fight a queue manager: the ownership registry on each system's fixture, and ``gang plan`` keeping
clear of queue-owned units (``infeasible:queue-owned`` when only they could make room)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scheduler.engine import parse_snapshot
from scheduler.engine.builders import pod, podgroup
from scheduler.queues.cluster import build_reading
from scheduler.queues.ownership import SIGNALS, owners

from .conftest import load_objects

ROOT = Path(__file__).resolve().parents[3]

EXPECTED = {
    "kueue": {f"team-a/train-a-{i}": ("kueue", "Workload team-a/job-train-a-7c1f2") for i in range(3)},
    "volcano": {
        "ml/train-r-0": ("volcano", "PodGroup ml/train-r"),
        "ml/train-r-1": ("volcano", "PodGroup ml/train-r"),
        "prod/serve-0": ("volcano", "PodGroup prod/serve"),
    },
    "kai": {f"vision/train-v-{i}": ("kai", "PodGroup vision/train-v") for i in range(2)},
    "yunikorn": {f"research/train-y-{i}": ("yunikorn", "application research/train-y") for i in range(3)},
}


@pytest.mark.parametrize("system", sorted(EXPECTED))
def test_each_system_owns_the_pods_it_placed(system):
    objects = load_objects(system)
    found = owners(build_reading(objects, parse_snapshot(objects)))
    assert {k: (o.system, o.object) for k, o in found.items()} == EXPECTED[system]
    assert all(o.action for o in found.values())


def test_every_system_has_a_signal():
    assert {s.system for s in SIGNALS} == set(EXPECTED)


def _with_urgent_gang(tmp_path, system, pods=2):
    objects = load_objects(system) + [podgroup("urgent", min_count=pods, priority=1000)]
    objects += [pod(f"urgent-{i}", group="urgent", gpus=8, cpu="8", memory="64Gi") for i in range(pods)]
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def gang_plan(path, **env):
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "gang",
            "plan",
            "--snapshot",
            path,
            "--podgroup",
            "default/urgent",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if k != "GANGWEB_QUEUE_VICTIMS"}, **env},
    )


def test_only_queue_owned_room_ends_infeasible_queue_owned(tmp_path):
    # 16 GPUs wanted: the non-queue pod on gpu-4 frees 8, the rest only Kueue's admitted Workload holds.
    done = gang_plan(_with_urgent_gang(tmp_path, "kueue"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "infeasible:queue-owned" and result["feasible"] is False
    assert result["victims"] == [] and result["evictions"] == []
    assert "kueue" in result["reason"] and "Workload team-a/job-train-a-7c1f2" in result["reason"]
    assert "\n" not in result["reason"]


def test_room_outside_the_queues_is_taken_as_before(tmp_path):
    done = gang_plan(_with_urgent_gang(tmp_path, "kueue", pods=1))
    result = json.loads(done.stdout)
    assert result["outcome"] == "preempt" and result["evictions"] == ["batch/scavenger"]


def test_an_allowed_system_s_units_may_be_taken(tmp_path):
    path = _with_urgent_gang(tmp_path, "volcano")
    held_back = json.loads(gang_plan(path).stdout)
    assert held_back["outcome"] == "infeasible:queue-owned" and "Volcano" in held_back["reason"]
    allowed = gang_plan(path, GANGWEB_QUEUE_VICTIMS="volcano")
    result = json.loads(allowed.stdout)
    assert result["outcome"] == "preempt"
    assert set(result["evictions"]) <= {"ml/train-r-0", "ml/train-r-1", "prod/serve-0"}


@pytest.mark.parametrize("system", ["kai", "kueue", "slurm"])
def test_systems_that_cannot_be_allowed_are_refused(tmp_path, system):
    done = gang_plan(_with_urgent_gang(tmp_path, "kai"), GANGWEB_QUEUE_VICTIMS=system)
    assert done.returncode != 0 and "GANGWEB_QUEUE_VICTIMS" in done.stderr
