"""``manage.py gang replay`` end to end, in a real process: --json, --plots, the progress bar, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from scheduler.replay.trace import POD_FILE
from tests.conftest import ROOT
from tests.scheduler.replay.conftest import FIXTURE

REQUIRED = (
    "brokenGangs",
    "idleGpuHoursInBrokenGangs",
    "gpuHoursLost",
    "evictions",
    "utilisation",
    "waitSecondsP50ByTier",
    "planLatencyMsP50",
)


def gang(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "gang", "replay", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_json_and_plots(tmp_path: Path):
    plots = tmp_path / "plots"
    done = gang("--trace", str(FIXTURE), "--hours", "3", "--seed", "4", "--json", "--plots", str(plots))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # quiet with --json: no progress bar
    report = json.loads(done.stdout)  # one JSON object and nothing else
    assert set(report["policies"]) == {"gangweb", "kep5710", "legacy", "none"}
    for figures in report["policies"].values():
        assert set(REQUIRED) <= set(figures)
        assert set(figures["waitSecondsP50ByTier"]) == {"low", "standard", "high"}
        assert 0 < figures["utilisation"] <= 1
    assert report["nodes"] == 16 and report["hours"] == 3
    for name in ("replay-utilisation.png", "replay-waits.png", "replay-lost.png"):
        with Image.open(plots / name) as image:
            assert image.format == "PNG" and image.width > 400 and image.height > 200
            image.verify()
    assert json.loads((plots / "replay.json").read_text())["policies"].keys() == report["policies"].keys()


def test_the_table_and_the_progress_bar(tmp_path: Path):
    done = gang(
        "--trace", str(FIXTURE), "--hours", "1", "--policies", "legacy,none", "--checkpoint-minutes", "15"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("gang replay: 16 nodes") and "checkpoint every 15 min" in lines[0]
    assert [line.split()[0] for line in lines[3:]] == ["legacy", "none"]
    assert "100% none (2/2)" in done.stderr  # not a terminal: one line per tenth


def test_a_malformed_trace_row_is_one_line_and_exit_2(tmp_path: Path):
    trace = tmp_path / "trace"
    trace.mkdir()
    for path in FIXTURE.glob("*.csv"):
        (trace / path.name).write_text(path.read_text())
    rows = (trace / POD_FILE).read_text().splitlines()
    rows[6] = rows[6].replace(",LS,", ",XX,").replace(",BE,", ",XX,").replace(",Burstable,", ",XX,")
    (trace / POD_FILE).write_text("\n".join(rows) + "\n")
    done = gang("--trace", str(trace), "--hours", "1", "--json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"gang: error: {trace / POD_FILE}: line 7: column qos:")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--trace", "/nonexistent/traces"), "trace directory not found: /nonexistent/traces"),
        (("--policies", "gangweb,fifo"), "--policies: expected distinct names"),
        (("--hours", "0"), "--hours: expected more than 0"),
        (("--nodes", "0"), "--nodes: expected at least 1"),
        (("--hours", "many"), "argument --hours: invalid float value"),
        (("--notice-seconds", "-5"), "--notice-seconds: expected 0 to 3600, got -5"),
        (("--lost-work-budget", "-1"), "--lost-work-budget: expected 0 or more, got -1"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, message):
    done = gang(*args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr


def test_notice_and_budget_are_in_the_report_and_its_header():
    done = gang(
        "--trace", str(FIXTURE), "--hours", "1", "--policies", "gangweb", "--notice-seconds", "60",
        "--lost-work-budget", "4", "-o", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["noticeSeconds"] == 60 and report["lostWorkBudgetGpuHours"] == 4
    table = gang("--trace", str(FIXTURE), "--hours", "1", "--policies", "none", "--notice-seconds", "60")
    assert "checkpoint every 30 min, notice 60 s;" in table.stdout.splitlines()[0]
