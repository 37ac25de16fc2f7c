"""The web process's heap, settled once its code is loaded (``settle``, called by ``gangweb.asgi``).

A full collection of the cyclic garbage collector walks every object the process holds, and most of
them are code: Django, DRF, drf-spectacular, gangweb's modules, the URL conf. Measured on this machine
(2026-12-01, load average 7, thread CPU time of one ``gc.collect()``): 107,000 objects after
``django.setup()``, 98 ms; 144,000 once the URL conf is loaded, 145 ms; 222,000 with ``bench api``'s
5,000-PodGroup cluster beside it, 230 ms. Frozen, the code is out of every later collection's sight.

``settle`` imports everything a request would (the URL conf and what it names), collects once and
freezes the result (``gc.freeze``: still freed by reference counting, never scanned again), and lets
the young generation grow to 10,000 objects before a collection, the thresholds of the webhook server
(``admission/server.py``; not measured apart here). What made the API's answers slow once in a
hundred was garbage in reference cycles, which only the collector frees: ``gangweb.api.v1.views.base``
no longer leaves any behind worth the name (docs/api.md, "Measured").
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
