"""``manage.py gang plan``: the engine from the command line; ``manage.py gang replay``: the trace replay;
``manage.py gang queues``: the queues of Kueue, Volcano, KAI and YuniKorn in a snapshot (``_queues.py``).

``manage.py gang bench`` is a deprecated alias of ``manage.py bench engine`` (``bench/engine.py``).

Needs no database. Bad input exits 2 with one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from django.conf import settings
from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand, CommandParser

from gangweb.cli.kubectl_plugin import PLANS, PLANS_WIDE, table
from scheduler.argtypes import add_output
from scheduler.engine import POLICIES, SnapshotError, load_objects, parse_snapshot
from scheduler.engine.policies import DEFAULT_POLICY
from scheduler.preemption import lostwork, planning
from scheduler.preemption.execution.notice import planned_notice
from scheduler.queues import queues_from
from scheduler.queues.blockers import blocker_for, with_blocker
from scheduler.queues.cluster import build_reading
from scheduler.queues.ownership import owners as queue_owners
from scheduler.queues.plans import plan_beside_queues

from ._queues import queues_arguments, run_queues_command
from ._replay import replay_arguments, run_replay_command


class _OneLineParser(CommandParser):
    """Argument errors as one line (``gang: error: ...``) and exit 2, as the contract asks."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


class Command(BaseCommand):
    help = "Plan atomic preemption for a PodGroup from a snapshot file; replay a GPU cluster trace under each policy (`gang bench`: alias of `manage.py bench engine`)."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = _OneLineParser
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        subcommands = parser.add_subparsers(
            dest="action", required=True, parser_class=_OneLineParser, metavar="{plan,queues,replay,bench}"
        )
        planning = subcommands.add_parser(
            "plan",
            help="print the preemption plan for a PodGroup (JSON; -o yaml|table|wide)",
            called_from_command_line=True,
        )
        planning.add_argument(
            "--snapshot",
            required=True,
            help="snapshot file (List or multi-document YAML/JSON); - reads standard input",
        )
        planning.add_argument("--podgroup", required=True, help="NAMESPACE/NAME of the PodGroup to place")
        planning.add_argument(
            "--policy", default=DEFAULT_POLICY, help=f"one of {', '.join(sorted(POLICIES))}"
        )
        add_output(planning, default="json", json_alias=False)
        planning.add_argument(
            "--debug",
            action="store_true",
            help="let an unexpected error end with its traceback instead of one line",
        )
        queues_arguments(
            subcommands.add_parser(
                "queues",
                help="print the queues of Kueue, Volcano, KAI and YuniKorn in a snapshot (docs/queues.md)",
                called_from_command_line=True,
            )
        )
        replay_arguments(
            subcommands.add_parser(
                "replay",
                help="replay a real GPU cluster trace under each preemption policy (docs/replay.md)",
                called_from_command_line=True,
            )
        )
        # Only listed here: `gang bench ...` is caught in run_from_argv and runs as `bench engine ...`.
        subcommands.add_parser(
            "bench",
            help="deprecated alias of `manage.py bench engine`",
            add_help=False,
            called_from_command_line=True,
        )

    def run_from_argv(self, argv):
        if argv[2:3] == ["bench"]:
            return _run_bench_engine(argv)
        return super().run_from_argv(argv)

    def handle(self, *args, **options):
        if options["action"] == "bench":  # `gang bench` without its own options, reached past run_from_argv
            return _run_bench_engine([sys.argv[0], "gang", "bench"])
        if options["action"] == "replay":
            return run_replay_command(options, self.stdout, self._fail)
        if options["action"] == "queues":
            return run_queues_command(options, self.stdout, self._fail)
        return self._plan(options)

    def _plan(self, options) -> None:
        try:
            source = options["snapshot"]
            # A Path is always a file (even one named like JSON text, "[snap].json"); both are read within
            # the bounds of scheduler/engine/reading.py (regular files only, GANGWEB_SNAPSHOT_MAX_BYTES, aliases).
            objects = load_objects(sys.stdin.buffer if source == "-" else Path(source))
            # Workloads that report no checkpoint save every GANGWEB_CHECKPOINT_INTERVAL_SECONDS (docs/engine.md).
            snapshot = parse_snapshot(objects).with_lost_work(lostwork.intervals())
            # Never a victim a queue manager placed, unless GANGWEB_QUEUE_VICTIMS allows its system.
            reading = build_reading(objects, snapshot)
            result = plan_beside_queues(
                snapshot,
                options["podgroup"],
                options["policy"],
                queue_owners(reading),
                settings.GANGWEB_QUEUE_VICTIMS,
            )
            # Why the gang waits (docs/queues.md "Why a gang waits"), then the same ``cost`` block as the API.
            blocker = blocker_for(queues_from(reading), reading, snapshot, options["podgroup"], result)
            output = with_blocker(result.to_dict(), blocker)
            output["cost"] = planning.result_of(snapshot, result).json_cost
            # The notice its victims get before they are evicted (docs/design.md "Notice").
            output["notice"] = planned_notice(output.get("victims") or [], objects)
        except SnapshotError as exc:
            self._fail(str(exc))
        except MemoryError:
            self._fail("snapshot too large to load")
        except Exception as exc:  # an engine bug: still one line, but named so that it gets reported
            if options["debug"]:
                raise
            self._fail(
                f"unexpected {type(exc).__name__}: {exc} (an engine bug; rerun with --debug for the traceback)"
            )
        self.stdout.write(_format_plan(output, options["output"]))

    @staticmethod
    def _fail(message: str):
        sys.stderr.write(f"gang: error: {' '.join(message.split())}\n")
        sys.exit(2)


def _format_plan(output: dict, how: str) -> str:
    """The contract's JSON (the default), the same in YAML, or the plan's line as ``kubectl gangweb plan`` prints it."""
    if how == "json":
        return json.dumps(output, indent=2)
    if how == "yaml":
        return yaml.safe_dump(output, sort_keys=False).rstrip("\n")
    return table([output], [*PLANS, *PLANS_WIDE] if how == "wide" else PLANS).rstrip("\n")


def _run_bench_engine(argv: list[str]) -> None:
    """``manage.py gang bench [options]`` as ``manage.py bench engine [options]`` (the same parser and code)."""
    bench = load_command_class(get_commands()["bench"], "bench")
    bench.run_as_alias(argv, "gang bench", "engine", skip=3)
