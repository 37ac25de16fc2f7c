import subprocess
import sys

import pytest

from scheduler.engine import parse_snapshot
from scheduler.engine.builders import node, pod
from scheduler.engine.resources import is_gpu, parse_quantity, pod_gpus, pod_requests, resource_gpus


@pytest.mark.parametrize(
    "text, milli, expected",
    [
        ("500m", True, 500),
        ("1", True, 1000),
        ("2.5", True, 2500),
        ("0.1", False, 1),
        ("16Gi", False, 16 * 2**30),
        ("1k", False, 1000),
        ("1e3", False, 1000),
        ("128974848", False, 128974848),
        ("129M", False, 129_000_000),
        ("123Mi", False, 123 * 2**20),
        (8, False, 8),
        ("1n", True, 1),
    ],
)
def test_quantities(text, milli, expected):
    assert parse_quantity(text, milli=milli) == expected


@pytest.mark.parametrize("bad", ["abc", "1Gb", "-1", "", "1.2.3", None, [1], True])
def test_bad_quantities_raise(bad):
    with pytest.raises(ValueError):
        parse_quantity(bad)


def _container(cpu, gpu=0, restart=None):
    requests = {"cpu": cpu}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    c = {"name": "c", "resources": {"requests": requests}}
    if restart:
        c["restartPolicy"] = restart
    return c


def test_pod_requests_sum_containers_max_init_add_sidecars_and_overhead():
    spec = {
        "containers": [_container("1", gpu=4), _container("500m")],
        "initContainers": [_container("3"), _container("250m", restart="Always"), _container("2")],
        "overhead": {"cpu": "100m"},
    }
    # steady: 1 + 0.5 + sidecar 0.25 = 1.75; init peaks: 3 (before sidecar), 2 + 0.25 = 2.25 -> max 3; + overhead
    assert pod_requests(spec) == {"cpu": 3100, "nvidia.com/gpu": 4}


def test_limits_stand_in_for_missing_requests():
    spec = {
        "containers": [
            {
                "name": "c",
                "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "1"}, "requests": {"cpu": "500m"}},
            }
        ]
    }
    assert pod_requests(spec) == {"cpu": 500, "nvidia.com/gpu": 2}


def test_pod_level_requests_win():
    spec = {"containers": [_container("1")], "resources": {"requests": {"cpu": "4"}}}
    assert pod_requests(spec)["cpu"] == 4000


def test_terminating_and_finished_pods_hold_nothing():
    snap = parse_snapshot(
        [
            node("n1", gpus=8),
            pod("running", node="n1", gpus=2),
            pod("terminating", node="n1", gpus=2, deleting=True),
            pod("done", node="n1", gpus=2, phase="Succeeded"),
            pod("failed", node="n1", gpus=2, phase="Failed"),
        ]
    )
    gpu = snap.resource_index["nvidia.com/gpu"]
    assert snap.free[0, gpu] == 6
    assert snap.free[0, snap.resource_index["pods"]] == 109
    assert [snap.pods[p].name for p in snap.bound] == ["running"]


@pytest.mark.parametrize(
    "name, gpu",
    [
        ("nvidia.com/gpu", True),
        ("amd.com/gpu", True),
        ("gpu.intel.com/i915", False),
        ("nvidia.com/gpu.shared", False),
        ("nvidia.com/mig-1g.5gb", False),
        ("cpu", False),
    ],
)
def test_one_rule_says_what_a_gpu_is_and_the_snapshot_counts_by_it(name, gpu):
    assert is_gpu(name) is gpu
    snap = parse_snapshot([node("n1", gpus=0, extra={name: "4"})])
    assert int(snap.gpus(snap.free)[0]) == (4 if gpu else 0)


def test_a_pod_and_a_node_count_their_gpus_by_the_same_rule_and_a_bad_one_counts_none():
    sidecar = {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
    trainer = {
        "metadata": {"name": "t"},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}],
            "initContainers": [sidecar],
        },
    }
    assert pod_gpus(trainer) == 3  # the sidecar's GPU is held beside the app's two
    mig = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/mig-1g.5gb": "1"}}}]}}
    assert pod_gpus(mig) == 0
    broken = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "x"}}}]}}
    assert pod_gpus(broken) == 0
    assert resource_gpus({"nvidia.com/gpu": "8", "amd.com/gpu": "2", "cpu": "64"}) == 10
    assert resource_gpus({"nvidia.com/gpu": "eight"}) == 0 and resource_gpus(None) == 0


def test_the_rule_imports_without_numpy_or_the_rest_of_the_engine():
    probe = (
        "import sys; from scheduler.engine.resources import is_gpu; "
        "print(sorted(m for m in ('numpy', 'yaml', 'scheduler.engine.snapshot') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
