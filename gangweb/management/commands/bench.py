"""``python manage.py bench <what> [options]``: every benchmark of gangweb, behind one command.

``BENCHMARKS`` below names each and the module that implements it (its ``HELP``, ``add_arguments`` and
``handle``; ``bench/__init__.py`` describes the shape). Each prints a table, or with ``--json``
(``-o json``; ``-o yaml`` the same object in YAML) one JSON object on stdout (progress, if any, goes to stderr); ``manage.py bench <what> --help`` lists its
options. Bad options exit 2 with one line on stderr.

The old spellings ``manage.py gang bench``, ``manage.py webhook bench`` and ``manage.py demo_bench`` are
aliases: the same parser and code, plus a one-line note on stderr (``run_as_alias``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import sys
from types import ModuleType

import yaml
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.utils import OperationalError

from scheduler.argtypes import add_output

# Listing order is the order of ``manage.py bench --help``.
BENCHMARKS = {
    "engine": "bench.engine",
    "webhook": "bench.webhook",
    "kube": "bench.kube",
    "execution": "bench.execution",
    "watch": "bench.watch",
    "native": "bench.native",
    "api": "bench.api",
    "demo": "bench.demo",
    "live": "bench.live",
    "map": "bench.map",
    "signin": "bench.signin",
    "notify": "bench.notify",
    "health": "bench.health",
    "queues": "bench.queues",
    "reading": "bench.reading",
}
# What each needs besides this process: the ledger's PostgreSQL database, or Redis.
NEEDS_LEDGER = {"execution", "api", "watch", "native", "live", "signin", "notify", "health", "queues"}
NEEDS_REDIS = {"watch", "native", "live", "notify"}


class _OneLineParser(CommandParser):
    """Argument errors as one line (``manage.py bench kube: error: ...``) and exit 2, like ``gang plan``."""

    def error(self, message: str):
        if not self.called_from_command_line:
            raise CommandError(f"Error: {message}")
        sys.stderr.write(f"{self.prog}: error: {' '.join(message.split())}\n")
        sys.exit(2)


def benchmark_module(name: str) -> ModuleType:
    """The benchmark's module, named as data: product code never imports the scaffolding (pyproject.toml)."""
    try:
        return importlib.import_module(BENCHMARKS[name])
    except ModuleNotFoundError as exc:
        if exc.name != "bench":
            raise
        raise SystemExit(
            "manage.py bench: the benchmarks run from a checkout of gangweb (the wheel leaves bench/ out)"
        ) from None


class Command(BaseCommand):
    help = "Run one of gangweb's benchmarks: " + ", ".join(BENCHMARKS) + " (each takes --help and --json)."
    # Benchmarks that need the database check for it and migrate themselves; the others need no checks.
    requires_system_checks: list = []
    requires_migrations_checks = False
    # Set by run_as_alias: the old spelling, for the note on stderr.
    old_spelling: str | None = None

    def create_parser(self, prog_name, subcommand, **kwargs):
        kwargs.setdefault("epilog", "each benchmark's options: manage.py bench <what> --help")
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = _OneLineParser
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        subcommands = parser.add_subparsers(
            dest="benchmark",
            required=True,
            parser_class=_OneLineParser,
            metavar="{" + ",".join(BENCHMARKS) + "}",
            title="benchmarks",
        )
        for name in BENCHMARKS:
            module = benchmark_module(name)
            sub = subcommands.add_parser(
                name,
                help=module.HELP,
                description=module.__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
            module.add_arguments(sub)
            # Each benchmark's own --json stays; -o json is the same, -o yaml the same object in YAML.
            add_output(sub, default="table", json_alias=False)

    def run_as_alias(self, argv: list[str], old_spelling: str, benchmark: str, skip: int) -> None:
        """Run ``argv`` (the old spelling's, its options from ``argv[skip:]``) as ``manage.py bench <benchmark>``."""
        self.old_spelling = old_spelling
        self.run_from_argv([argv[0], "bench", benchmark, *argv[skip:]])

    def handle(self, *args, benchmark: str, **options):
        if self.old_spelling:  # after parsing: bad options still answer in one line
            self.stderr.write(
                f"note: `manage.py {self.old_spelling}` is now `manage.py bench {benchmark}`; "
                "the old spelling is a deprecated alias"
            )
        if benchmark in NEEDS_LEDGER:
            if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
                raise CommandError("set DATABASE_URL to a PostgreSQL database (the ledger lives there)")
            try:
                call_command("migrate", verbosity=0)
            except OperationalError as exc:
                raise CommandError(f"cannot use the database: {str(exc).strip().splitlines()[-1]}") from None
        if benchmark in NEEDS_REDIS and not os.environ.get("REDIS_URL"):
            raise CommandError(f"set REDIS_URL (bench {benchmark} needs Redis)")
        django_options = {
            "verbosity",
            "settings",
            "pythonpath",
            "traceback",
            "no_color",
            "force_color",
            "skip_checks",
        }
        own = argparse.Namespace(**{k: v for k, v in options.items() if k not in django_options})
        how = own.__dict__.pop("output")
        own.json = own.json or how in ("json", "yaml")
        if how == "yaml":
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                status = benchmark_module(benchmark).handle(own)
            if not status:
                sys.stdout.write(yaml.safe_dump(json.loads(printed.getvalue()), sort_keys=False))
        else:
            status = benchmark_module(benchmark).handle(own)
        if status:
            raise CommandError(f"bench {benchmark} failed", returncode=status)
