"""The web process's heap, settled once its code is loaded (``settle``, called by ``gangweb.asgi``).

A full collection of the cyclic garbage collector walks every object the process holds, and most of
them are the code: Django, DRF, drf-spectacular, gangweb's modules, the URL conf. Measured in
``bench api`` (2026-12-01, load average 7-8): 144,000 objects after loading the URL conf, one full
collection 145 ms of CPU; 80,000 with that code frozen. One such collection landed in about one
answer in a hundred of the ledger lists (``plans``, ``evictions``, ``ledger?kind=``: p99 300 ms to
1.3 s while p50 was 26-53 ms; gc.callbacks bracketed the whole difference; docs/api.md).

``settle`` imports everything a request would (the URL conf and what it names), collects once and
freezes the result (``gc.freeze``: out of every later collection's sight, still freed by reference
counting), and lets the young generation grow to 10,000 objects before a collection, as the webhook
server does (``admission/server.py``): answers build and drop thousands of objects, and each
collection in the middle of one promotes the live ones towards the old generation, whose growth
triggers the next full collection.
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 20, 20)


def settle() -> None:
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every view, serializer and schema module now
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
