"""Admission's GPU rule is the engine's: one answer to "is this a GPU" (admission/resources.py says why it is
restated there rather than imported)."""

from __future__ import annotations

import pytest

from admission.controllers import describe_shape, gpu_shape, requested_resources
from admission.podview import pod_view
from admission.resources import is_gpu
from scheduler.engine import resources as engine

NAMES = ["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "nvidia.com/mig-1g.10gb", "example.com/GPU",
         "cpu", "memory", "nvidia.com/gpu-shared", "gpu", "example.com/vgpu", "ephemeral-storage"]  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_admission_and_the_engine_agree(name):
    assert is_gpu(name) == engine.is_gpu(name)


def test_gpu_shapes_count_what_the_engine_counts():
    pod = pod_view({"spec": {"containers": [
        {"resources": {"limits": {"nvidia.com/gpu": "2", "gpu.intel.com/i915": "1"}}},
        {"resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "4"}, "limits": {"nvidia.com/gpu": "1"}}},
    ]}})  # fmt: skip
    assert describe_shape(gpu_shape(requested_resources(pod.spec))) == "3x nvidia.com/gpu"
