"""Which resources admission counts as GPUs: one rule, called from this one place.

The rule is the engine's (``scheduler/engine/resources.py:is_gpu``): an extended resource named
``<vendor>/gpu`` (``nvidia.com/gpu``, ``amd.com/gpu``). Admission's pure modules may not import the
scheduler package (tests/admission/test_layering.py), so the rule is restated here; a test
(tests/admission/test_resources.py) holds the two to the same answers.
"""

from __future__ import annotations


def is_gpu(resource: str) -> bool:
    """Extended resources that are accelerators (``nvidia.com/gpu``, ``amd.com/gpu``...)."""
    return resource.endswith("/gpu")
