"""``manage.py bench <name>`` runs each pipeline/API benchmark in a real process (figures: docs, not asserts)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT


def manage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_kube_benchmark_prints_one_json_object():
    result = manage("bench", "kube", "--nodes", "4", "--pods", "20", "--evictions", "5", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout)
    assert figures["evictions"] == 5 and figures["evictions_per_s"] > 0


def test_an_unknown_benchmark_or_option_is_a_clear_error():
    unknown = manage("bench", "nosuch")
    assert unknown.returncode != 0 and "invalid choice: 'nosuch'" in unknown.stderr
    bad_option = manage("bench", "kube", "--nodes", "0")
    assert bad_option.returncode != 0 and "must be at least 1" in bad_option.stderr
    assert "Traceback" not in unknown.stderr + bad_option.stderr
