from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "replay" / "trace"


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    """A writable copy of the synthesized trace, for tests that break a file."""
    target = tmp_path / "trace"
    shutil.copytree(FIXTURE, target)
    return target
