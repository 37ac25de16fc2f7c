"""Kubernetes adapter (``KubeCluster``) and the local Kubernetes API test server (``KubeTestServer``).

No Django import here. Names are loaded lazily so that importing the test server does not pull in
the official client and vice versa.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "KubeCluster": ".adapter",
    "KubeTestServer": ".testserver",
    "TestServerProcess": ".testserver",
    "ControlClient": ".control",
    "ObjectStore": ".store",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(name)
