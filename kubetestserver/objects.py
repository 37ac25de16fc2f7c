"""Object lists as ``kubectl get -o yaml|json`` prints them (``List``s flattened), and timestamps.

Snapshot files are read by ``scheduler.engine.reading`` (bounded), never here."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def flatten(objects: Iterable[dict]) -> Iterable[dict]:
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            yield from flatten(obj["items"])
        else:
            yield obj
