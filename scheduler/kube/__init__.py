"""Kubernetes adapter: ``KubeCluster``, the ``Cluster`` protocol over the official client.

No Django here. The local Kubernetes API server the tests run this against is test tooling and lives
apart, in ``kubetestserver`` (which imports ``resources`` and ``budgets`` from here, never the reverse).
``KubeCluster`` is loaded lazily so that importing ``scheduler.kube.resources`` or ``budgets`` does not pull
in the official client.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "KubeCluster": ".adapter",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(name)
