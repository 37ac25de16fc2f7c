"""A namespace's mode is decided in one place: ``scheduler.preemption.runtime.mode_for``."""

from __future__ import annotations

import re

import pytest

from scheduler.preemption import runtime
from tests.conftest import ROOT

MODE_SETTINGS = re.compile(r"\bGANGWEB_(?:NAMESPACE_MODES|MODE)\b")
# Where the two settings may be named: where they are defined and the one decision (docs/pipeline.md, "Modes").
READERS = {"gangweb/settings.py", "scheduler/preemption/runtime.py"}


def test_only_the_runtime_decides_a_namespace_mode():
    readers = {
        str(path.relative_to(ROOT))
        for package in ("scheduler", "admission", "gangweb")
        for path in (ROOT / package).rglob("*.py")
        if MODE_SETTINGS.search(path.read_text())
    }
    assert readers <= READERS, f"{sorted(readers - READERS)} read the mode settings; call runtime.mode_for"


@pytest.mark.parametrize(
    "default, overrides, expected, anywhere",
    [
        ("enforce", {}, {"team-a": "enforce", "team-b": "enforce"}, False),
        ("enforce", {"team-a": "observe"}, {"team-a": "observe", "team-b": "enforce"}, True),
        ("observe", {"team-a": "enforce"}, {"team-a": "enforce", "team-b": "observe"}, True),
    ],
)
def test_a_namespace_override_wins_over_the_default(settings, default, overrides, expected, anywhere):
    settings.GANGWEB_MODE, settings.GANGWEB_NAMESPACE_MODES = default, overrides
    assert {namespace: runtime.mode_for(namespace) for namespace in expected} == expected
    assert runtime.observes_any_namespace() is anywhere
