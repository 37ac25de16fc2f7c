"""gangweb's benchmarks, one module per subcommand of ``python manage.py bench <what>``.

Scaffolding, not product: no module of ``gangweb``, ``scheduler`` or ``admission`` imports this package (an
import-linter contract), and the wheel leaves it out, because benchmarks run the product against test tooling
(``kubetestserver``, ``testkit``) that the wheel does not hold either.

Each module has the shape ``manage.py bench`` (``gangweb/management/commands/bench.py``) turns into one
subcommand: ``HELP`` (its line in ``manage.py bench --help``), ``add_arguments(parser)`` (its options) and
``handle(options) -> int`` (prints a table, or with ``--json`` one JSON object on stdout; returns the exit
status). Helpers a benchmark shares live beside them (``engine_timing``, ``webhook_load``, ``realserver``,
``trials``, ``timing``).
"""

from __future__ import annotations

from scheduler.argtypes import at_least_one

__all__ = ["at_least_one"]
