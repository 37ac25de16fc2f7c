"""Test builders: generated clusters and oracles the tests and the benchmarks share.

Scaffolding, not product: no module of ``gangweb``, ``scheduler`` or ``admission`` imports this package (an
import-linter contract), and the wheel leaves it out. The object builders the product itself uses (the replay,
the simulated cluster) stay in the engine: ``scheduler/engine/builders.py`` and ``scheduler/engine/dra/builders.py``.
"""
