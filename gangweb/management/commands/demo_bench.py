"""``python manage.py demo_bench [--runs 3] [--json]``: deprecated alias of ``manage.py bench demo``
(``bench/demo.py``): the same parser and code, plus a one-line note on stderr."""

from __future__ import annotations

from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Deprecated alias of `manage.py bench demo` (seconds from a fresh clone to a live page)."

    def run_from_argv(self, argv):
        bench = load_command_class(get_commands()["bench"], "bench")
        bench.run_as_alias(argv, "demo_bench", "demo", skip=2)

    def handle(self, *args, **options):  # call_command("demo_bench"): the defaults
        import sys

        self.run_from_argv([sys.argv[0], "demo_bench"])
