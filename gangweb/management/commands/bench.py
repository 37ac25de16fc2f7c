"""``python manage.py bench kube|execution|fanout|api [options]``: the pipeline's and the API's benchmarks.

Each prints a table, or with ``--json`` one JSON object; ``manage.py bench <name> --help`` lists its
options. The engine's and the webhook's benchmarks are ``manage.py gang bench`` and ``manage.py webhook
bench``; ``manage.py demo_bench`` times the demo.
"""

from __future__ import annotations

import argparse
import importlib
import os

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db.utils import OperationalError

BENCHMARKS = {
    "kube": "scheduler.kube.bench",  # the adapter against the Kubernetes API test server
    "execution": "scheduler.execution_bench",  # whole executions: ledger, dry runs, evictions
    "fanout": "scheduler.fanout_bench",  # planning fanned out over sub-snapshots vs one task
    "api": "gangweb.api.bench",  # the REST API's read path
}
# What each needs besides this process: the ledger's PostgreSQL database, or Redis.
NEEDS_LEDGER = {"execution", "api"}
NEEDS_REDIS = {"fanout"}


class Command(BaseCommand):
    help = "Benchmarks of the pipeline and the API: kube, execution, fanout, api (each takes --help, --json)."

    def add_arguments(self, parser):
        parser.add_argument("benchmark", choices=sorted(BENCHMARKS))
        parser.add_argument("options", nargs=argparse.REMAINDER, help="the benchmark's own options")

    def handle(self, *args, benchmark: str, options: list[str], **_):
        if benchmark in NEEDS_LEDGER and "-h" not in options and "--help" not in options:
            if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
                raise CommandError("set DATABASE_URL to a PostgreSQL database (the ledger lives there)")
            try:
                call_command("migrate", verbosity=0)
            except OperationalError as exc:
                raise CommandError(f"cannot use the database: {str(exc).strip().splitlines()[-1]}") from None
        if benchmark in NEEDS_REDIS and not os.environ.get("REDIS_URL"):
            raise CommandError("set REDIS_URL (the fan-out stashes the sub-snapshots in Redis)")
        status = importlib.import_module(BENCHMARKS[benchmark]).main(options)
        if status:
            raise CommandError(f"bench {benchmark} failed", returncode=status)
