"""Objects are told by API group and kind: a queue manager's PodGroup or Workload is never read as
Kubernetes' own (scheduler/kinds.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scheduler.engine import parse_snapshot
from scheduler.engine.builders import node, pod, podgroup
from scheduler.engine.caching.live import LiveSnapshot
from scheduler.kinds import group_kind, is_native, native_kind
from scheduler.kube.resources import PODGROUPS, resource_for_object

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "queues"

VOLCANO_PODGROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "g", "namespace": "default"},
    "spec": {"minMember": 3, "queue": "default"},
}
KAI_PODGROUP = {
    "apiVersion": "scheduling.run.ai/v2alpha2",
    "kind": "PodGroup",
    "metadata": {"name": "g", "namespace": "default"},
    "spec": {"minMember": 1, "queue": "team"},
}
KUEUE_WORKLOAD = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {"name": "g", "namespace": "default"},
    "spec": {"queueName": "main", "podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}]},
}


def _objects():
    return [
        node("n1"),
        podgroup("g", min_count=1, priority=100),
        pod("g-0", group="g", gpus=8),
        pod("low", node="n1", gpus=8, priority=1),
    ]


def test_kind_needs_its_group():
    assert native_kind(VOLCANO_PODGROUP) is None and native_kind(KAI_PODGROUP) is None
    assert native_kind(KUEUE_WORKLOAD) is None
    assert is_native(podgroup("g", min_count=1), "PodGroup")
    # Hand-written objects without an apiVersion are taken to be Kubernetes' own.
    assert native_kind({"kind": "Pod"}) == "Pod"
    assert group_kind(VOLCANO_PODGROUP) == ("scheduling.volcano.sh", "PodGroup")


def test_snapshot_reads_only_the_native_podgroup_of_a_shared_name():
    snapshot = parse_snapshot([*_objects(), VOLCANO_PODGROUP, KAI_PODGROUP, KUEUE_WORKLOAD])
    assert list(snapshot.groups) == ["default/g"]
    assert snapshot.groups["default/g"].min_count == 1


def test_live_snapshot_ignores_other_groups_kinds():
    live = LiveSnapshot(_objects())
    version = live.version
    for obj in (VOLCANO_PODGROUP, KAI_PODGROUP, KUEUE_WORKLOAD):
        assert live.apply("ADDED", obj) is False
    assert live.version == version


def test_adapter_never_takes_a_crd_for_the_native_resource():
    other_version = {**VOLCANO_PODGROUP, "apiVersion": "scheduling.volcano.sh/v1"}
    assert resource_for_object(other_version) is not PODGROUPS
    assert resource_for_object({"kind": "PodGroup"}) is PODGROUPS
    assert resource_for_object(VOLCANO_PODGROUP).group == "scheduling.volcano.sh"


@pytest.mark.parametrize(
    ("fixture", "podgroup_key"),
    [
        ("volcano", "default/g"),
        ("kai", "default/g"),
        ("kueue", "team-b/train-b"),
        ("yunikorn", "default/g"),
    ],
)
def test_gang_plan_reads_a_snapshot_with_queue_objects(tmp_path, fixture, podgroup_key):
    documents = list(yaml.safe_load_all((FIXTURES / f"{fixture}.yaml").read_text()))
    if podgroup_key == "default/g":
        documents += [podgroup("g", min_count=1, priority=100), pod("g-0", group="g", gpus=8)]
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "gang",
            "plan",
            "--snapshot",
            str(path),
            "--podgroup",
            podgroup_key,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["podGroup"] == podgroup_key
