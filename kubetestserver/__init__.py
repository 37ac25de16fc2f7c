"""Test tooling, not product: a local Kubernetes API server (in-memory state, real paths and object
shapes) that the tests, the benchmarks and the demos run the adapter (``scheduler.kube``) against.

Nothing in ``scheduler``, ``admission`` or ``gangweb`` imports this package (``tests/test_layering.py``);
it imports the product's resource table (``scheduler.kube.resources``), the Eviction API's budget rule
(``scheduler.kube.budgets``) and the engine's bounded snapshot reader. No Django, no Kubernetes client.

    from kubetestserver import KubeTestServer        # in process
    python -m kubetestserver --port 0 --load snapshot.yaml --kubeconfig kc.yaml   # another process

Names are loaded lazily, so ``python -m kubetestserver.testserver`` runs without a second copy.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "KubeTestServer": ".testserver",
    "TestServerProcess": ".testserver",
    "write_kubeconfig": ".testserver",
    "ControlClient": ".control",
    "ObjectStore": ".store",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(name)
