"""Admission counts GPUs by the engine's one rule (scheduler/engine/resources.py:is_gpu)."""

from __future__ import annotations

from admission.controllers import describe_shape, gpu_shape, requested_resources
from admission.podview import pod_view


def test_gpu_shapes_count_what_the_engine_counts():
    pod = pod_view(
        {
            "spec": {
                "containers": [
                    {"resources": {"limits": {"nvidia.com/gpu": "2", "gpu.intel.com/i915": "1"}}},
                    {
                        "resources": {
                            "requests": {"nvidia.com/gpu": "1", "cpu": "4"},
                            "limits": {"nvidia.com/gpu": "1"},
                        }
                    },
                ]
            }
        }
    )
    assert describe_shape(gpu_shape(requested_resources(pod.spec))) == "3x nvidia.com/gpu"
