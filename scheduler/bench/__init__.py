"""The pipeline's benchmarks, run by ``python manage.py bench engine|kube|execution|watch``.

Scaffolding, not product: nothing in the pipeline imports these modules, and they may run the product against
the Kubernetes API test server (``kubetestserver``), which product code never imports (``tests/test_layering.py``).

Each module is one benchmark with the same shape, which ``manage.py bench`` (``gangweb/management/commands/bench.py``)
turns into one subcommand: ``HELP`` (its line in ``manage.py bench --help``), ``add_arguments(parser)`` (its options)
and ``handle(options) -> int`` (prints a table, or with ``--json`` one JSON object on stdout; returns the exit
status). The webhook's, the API's and the demo's benchmarks have the same shape beside their code
(``admission/bench.py``, ``gangweb/api/bench.py``, ``gangweb/demo_bench.py``).
"""

from __future__ import annotations

from scheduler.argtypes import at_least_one

__all__ = ["at_least_one"]
