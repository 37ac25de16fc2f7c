"""The web process's heap, settled once its code is loaded (``settle``, called by ``gangweb.asgi``).

A full collection of the cyclic garbage collector walks every object the process holds, and most of
them are code (Django, DRF, drf-spectacular, gangweb's modules, the URL conf). ``settle`` imports
everything a request would, collects once and freezes the result (``gc.freeze``: still freed by
reference counting, never scanned again), and lets the young generation grow to 10,000 objects before
a collection, the thresholds of the webhook server (``admission/server.py``). docs/api.md ("Measured")
has the figures.
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
