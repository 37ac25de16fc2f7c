"""``manage.py bench <what>``: one command, one help listing, every benchmark (figures: docs, not asserts).

The benchmarks that need PostgreSQL or Redis are run by their own tests (tests/gangweb/api/test_bench.py) and
by hand; here each one's options are checked on the parser, the quick ones run in a real process, and the old
spellings (``gang bench``, ``webhook bench``, ``demo_bench``) are shown to be aliases of the same code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gangweb.management.commands.bench import BENCHMARKS, Command
from tests.conftest import ROOT

NOTE = "is now `manage.py bench"


def manage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def subparsers() -> dict:
    parser = Command().create_parser("manage.py", "bench")
    (action,) = [a for a in parser._actions if a.dest == "benchmark"]
    return parser, action.choices


def test_one_help_lists_every_benchmark():
    parser, choices = subparsers()
    assert (
        list(choices)
        == [
            "engine",
            "webhook",
            "kube",
            "execution",
            "watch",
            "native",
            "api",
            "demo",
            "live",
            "map",
            "signin",
            "notify",
            "health",
            "queues",
            "reading",
        ]
        == list(BENCHMARKS)
    )
    listing = " ".join(parser.format_help().split())
    for name in BENCHMARKS:
        assert name in listing
    assert "formerly `gang bench`" in listing and "formerly `webhook bench`" in listing


# Each benchmark keeps the options it had under its old command name, and --json; -o/--output beside it.
FLAGS = {
    "engine": {"--nodes", "--repeats", "--policy", "--seed", "--devices", "--quality", "--json"},
    "webhook": {"--connections", "--duration", "--slice", "--warmup", "--workers", "--clients", "--json"},
    "kube": {"--nodes", "--pods", "--evictions", "--json"},
    "execution": {"--victims", "--repeat", "--delay-ms", "--json"},
    "watch": {
        "--nodes",
        "--idle-seconds",
        "--churn-seconds",
        "--churn-rate",
        "--concurrency",
        "--server",
        "--json",
    },
    "native": {"--nodes", "--gangs", "--policies", "--place-timeout", "--json"},
    "api": {"--requests", "--victims", "--podgroups", "--repeat", "--gc", "--json"},
    "demo": {"--runs", "--json"},
    "signin": {"--guessers", "--seconds", "--path", "--free", "--json"},
    "notify": {"--rate", "--seconds", "--concurrency", "--goal", "--json"},
    "health": {"--nodes", "--trials", "--json"},
    "queues": {"--nodes", "--queues", "--pending", "--trials", "--repeat", "--json"},
    "reading": {"--nodes", "--runs", "--json"},
}


@pytest.mark.parametrize("name", list(FLAGS))
def test_each_benchmark_keeps_its_flags(name):
    _, choices = subparsers()
    flags = {flag for action in choices[name]._actions for flag in action.option_strings} - {"-h", "--help"}
    assert flags == FLAGS[name] | {"-o", "--output"}
    assert choices[name].prog == f"manage.py bench {name}"


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_each_benchmarks_json_flag_reaches_it_as_json(name):
    """The front door reads ``--json`` as ``options.json`` for every benchmark (and sets it for ``-o json``)."""
    parser, _ = subparsers()
    for flags, expected in ((["--json"], True), ([], False)):
        options = vars(parser.parse_args([name, *flags]))
        assert options.get("json") is expected, f"bench {name} names its --json something else"


def test_kube_benchmark_prints_one_json_object():
    result = manage("bench", "kube", "--nodes", "4", "--pods", "20", "--evictions", "5", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout)
    assert figures["evictions"] == 5 and figures["evictions_per_s"] > 0
    assert NOTE not in result.stderr


def test_engine_benchmark_prints_one_json_object():
    result = manage("bench", "engine", "--quality", "2", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(json.loads(result.stdout)["policies"]) == {"kep5710", "gangweb"}


def test_an_unknown_benchmark_or_option_is_a_clear_error():
    unknown = manage("bench", "nosuch")
    assert unknown.returncode == 2 and "invalid choice: 'nosuch'" in unknown.stderr
    bad_option = manage("bench", "kube", "--nodes", "0")
    assert bad_option.returncode == 2 and "must be at least 1" in bad_option.stderr
    for result in (unknown, bad_option):
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_gang_bench_is_an_alias_with_a_note():
    result = manage("gang", "bench", "--quality", "2", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert set(json.loads(result.stdout)["policies"]) == {"kep5710", "gangweb"}, (
        "stdout stays one JSON object"
    )
    assert "`manage.py gang bench` is now `manage.py bench engine`" in result.stderr.splitlines()[0]


def test_old_spellings_parse_with_the_new_parser_and_bad_input_stays_one_line():
    for args, prog in (
        (("gang", "bench", "--nodes", "zero"), "manage.py bench engine"),
        (("webhook", "bench", "--connections", "many"), "manage.py bench webhook"),
        (("demo_bench", "--runs", "0"), "manage.py bench demo"),
    ):
        result = manage(*args)
        assert result.returncode == 2, (args, result.stderr)
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"{prog}: error:"), line


def test_old_spellings_still_show_in_their_commands_help():
    assert "deprecated alias of `manage.py bench engine`" in " ".join(manage("gang", "--help").stdout.split())
    assert "deprecated alias of `manage.py bench webhook`" in " ".join(
        manage("webhook", "--help").stdout.split()
    )


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_watch_benchmark_prints_the_contract_keys():
    """The acceptance contract of ``bench watch``: one JSON object with the LIST counts and the latency.

    Two sizes in one run: each size's trials are answered by its own worker's requests and evictions (a
    finished request of the first size once made every trial of the second "fit" at once), and the
    real worker, planning on its watch cache, evicts exactly the pods the in-process plan names."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get("REDIS_URL"):
        pytest.skip("bench watch needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    result = manage(
        "bench", "watch", "--nodes", "240", "300", "--idle-seconds", "3", "--churn-seconds", "3", "--json"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["lists_after_startup_idle"] == 0 and figures["lists_after_startup_churn"] == 0
    assert figures["churn_changes_per_s"] > 50
    assert figures["unschedulable_to_first_eviction_p50_s"] > 0 and figures["plan_equals_fresh_parse"]
    assert [s["nodes"] for s in figures["sizes"]] == [240, 300]
    for size in figures["sizes"]:
        assert size["trials_not_matching_in_process_plan"] == [], size
        assert len(size["unschedulable_to_first_eviction_s"]) >= 2, size
        for timeline in size["first_eviction_timelines_s"]:  # where a plan's time went, from the ledger
            parts = timeline["plan_parts"]
            assert 0 < parts["snapshot"] <= parts["view"] and parts["engine"] > 0, timeline


def test_health_benchmark_prints_the_contract_keys():
    """The contract of ``bench health``: a member killed until gang.broken is committed, and the join."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("bench health needs DATABASE_URL (PostgreSQL)")
    result = manage("bench", "health", "--nodes", "200", "--trials", "3", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["trials"] == 3 and figures["gpus"] == 1600
    assert 0 < figures["broken_detect_p50_s"] <= figures["broken_detect_p99_s"]
    assert figures["broken_detect_p50_s"] >= figures["settle_s"]  # a change is recorded once it has held
    assert figures["activity_join_p50_ms"] > 0 and figures["activity_idle_gpus"] > 0


def test_queues_benchmark_prints_the_contract_keys():
    """``bench queues``: the read model, the ownership signals, a Workload event and GET /api/v1/queues/."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("bench queues needs DATABASE_URL (PostgreSQL)")
    result = manage(
        "bench",
        "queues",
        "--nodes",
        "200",
        "--queues",
        "20",
        "--pending",
        "50",
        "--trials",
        "2",
        "--repeat",
        "5",
        "--json",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["queues"] == 2 + 20 + 20  # Cohorts, ClusterQueues, LocalQueues
    assert figures["pending"] == 50 and figures["ownedPods"] > 0
    for key in ("build", "owners", "event", "api"):
        unit = "us" if key == "event" else "ms"
        assert 0 < figures[f"{key}_p50_{unit}"] <= figures[f"{key}_p99_{unit}"]
