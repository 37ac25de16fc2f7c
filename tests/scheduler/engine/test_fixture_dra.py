"""The DRA fixture: real resource.k8s.io/v1 objects, strict-valid for 1.37, planned from the file."""

import kubernetes_validate.utils
import pytest
import yaml

from scheduler.engine import load_snapshot, plan
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "engine" / "dra-gpus.yaml"
MIXED = ROOT / "tests" / "fixtures" / "engine" / "dra-extended.yaml"


@pytest.mark.parametrize("fixture", [FIXTURE, MIXED], ids=lambda path: path.name)
def test_every_object_of_the_fixture_is_valid_for_kubernetes_1_37(fixture):
    for obj in yaml.safe_load(fixture.read_text())["items"]:
        kubernetes_validate.utils.validate(obj, "1.37.0", strict=True)


def test_the_gang_takes_the_dra_nodes_by_evicting_the_sweep_and_spares_the_extended_resource_pod():
    snap = load_snapshot(FIXTURE)
    assert snap.gpus(snap.alloc).tolist() == [8, 8, 8]  # dra-1, dra-2 (devices), ext-1 (nvidia.com/gpu)
    result = plan(snap, "ml/train")
    assert result.outcome == "preempt"
    assert result.evictions == ["ml/sweep-0", "ml/sweep-1"] and result.evicted_gpus == 16
    assert result.placement == {"ml/train-0": "dra-1", "ml/train-1": "dra-2"}
    assert result.lost_gpu_seconds > 0


def test_nvidia_gpu_requests_take_a_dra_node_and_the_plugin_node_but_not_the_critical_pods_gpus():
    snap = load_snapshot(MIXED)
    assert snap.gpus(snap.alloc).tolist() == [8, 8, 8]  # dra-1, dra-2 (devices), plugin-1 (nvidia.com/gpu)
    result = plan(snap, "ml/train")
    assert result.outcome == "preempt"
    assert result.evictions == ["ml/sweep-0", "ml/sweep-1"] and result.evicted_gpus == 16
    assert result.placement == {"ml/train-0": "dra-1", "ml/train-1": "plugin-1"}
