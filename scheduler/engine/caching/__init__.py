"""Process-lifetime caching over the engine: ``LiveSnapshot`` (a snapshot kept current from watch events)
and ``HeapSettler`` (the long-lived cache kept out of the garbage collector's walks).

Above the planning core and the DRA package: nothing else in the engine imports it (a contract in
pyproject.toml), so a one-shot ``gang plan`` never loads it.
"""
