"""``manage.py gang plan`` and ``manage.py gang bench``: the engine from the command line.

Needs no database. Bad input exits 2 with one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from scheduler.engine import POLICIES, SnapshotError, load_snapshot, plan
from scheduler.engine.bench import DEFAULT_NODES, POLICY_ORDER, format_table, run_benchmark, stderr_progress
from scheduler.engine.policies import DEFAULT_POLICY
from scheduler.engine.quality import format_study, study


class _OneLineParser(CommandParser):
    """Argument errors as one line (``gang: error: ...``) and exit 2, as the contract asks."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = "Plan atomic preemption for a PodGroup from a snapshot file, or benchmark the engine."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = _OneLineParser
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        subcommands = parser.add_subparsers(dest="action", required=True, parser_class=_OneLineParser,
                                            metavar="{plan,bench}")
        planning = subcommands.add_parser("plan", help="print the preemption plan for a PodGroup as JSON",
                                          called_from_command_line=True)
        planning.add_argument("--snapshot", required=True,
                              help="snapshot file (List or multi-document YAML/JSON); - reads standard input")
        planning.add_argument("--podgroup", required=True, help="NAMESPACE/NAME of the PodGroup to place")
        planning.add_argument("--policy", default=DEFAULT_POLICY, help=f"one of {', '.join(sorted(POLICIES))}")
        planning.add_argument("--debug", action="store_true",
                              help="let an unexpected error end with its traceback instead of one line")
        benching = subcommands.add_parser("bench", help="plan latency and victims on synthetic GPU clusters",
                                          called_from_command_line=True)
        benching.add_argument("--nodes", type=_positive, nargs="+", default=list(DEFAULT_NODES),
                              help="cluster sizes (nodes x 8 GPUs), default 1000 5000 20000")
        benching.add_argument("--repeats", type=_positive, default=7, help="plans per cell (p50/p95 over them)")
        benching.add_argument("--policy", dest="policies", nargs="+", default=list(POLICY_ORDER),
                              choices=sorted(POLICIES))
        benching.add_argument("--seed", type=int, default=7)
        benching.add_argument("--quality", type=_positive, metavar="N",
                              help="instead of timing: compare plans with the brute-force optimum on N small clusters")
        benching.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    def handle(self, *args, **options):
        if options["action"] == "plan":
            return self._plan(options)
        return self._bench(options)

    def _plan(self, options) -> None:
        try:
            source = options["snapshot"]
            # A Path is always a file (even one named like JSON text, "[snap].json"); both are read within
            # the bounds of scheduler/engine/reading.py (regular files only, GANGWEB_SNAPSHOT_MAX_BYTES, aliases).
            snapshot = load_snapshot(sys.stdin.buffer if source == "-" else Path(source))
            result = plan(snapshot, options["podgroup"], options["policy"])
        except SnapshotError as exc:
            self._fail(str(exc))
        except MemoryError:
            self._fail("snapshot too large to load")
        except Exception as exc:  # an engine bug: still one line, but named so that it gets reported
            if options["debug"]:
                raise
            self._fail(f"unexpected {type(exc).__name__}: {exc} (an engine bug; rerun with --debug for the traceback)")
        self.stdout.write(json.dumps(result.to_dict(), indent=2))

    def _bench(self, options) -> None:
        if options["quality"]:
            found = study(options["quality"], seed=options["seed"], progress=stderr_progress)
            self.stdout.write(json.dumps(found) if options["json"] else format_study(found))
            return
        results = run_benchmark(options["nodes"], repeats=options["repeats"], policies=options["policies"],
                                seed=options["seed"], progress=stderr_progress)
        self.stdout.write(json.dumps(results) if options["json"] else format_table(results))

    @staticmethod
    def _fail(message: str):
        sys.stderr.write(f"gang: error: {' '.join(message.split())}\n")
        sys.exit(2)
