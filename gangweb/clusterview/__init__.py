"""The live cluster as its readers see it, below both the API and the dashboard: one reading per process
(``reading``), one walk over its objects (``walk``: gangs, members, GPUs), the GPU map's picture of it
(``picture``, a waiting gang's reason ``reasons``), the rows the API serves (``rows``, from the same walk),
and the cuts to a reader's scope (``scoping``, ``redact``). It imports neither ``gangweb.api`` nor
``gangweb.dashboard`` (a ``layers`` contract in pyproject.toml), so both read it."""
