"""Snapshot files and object lists: what ``kubectl get -o yaml|json`` prints, as plain dicts."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterable

import yaml


def now_rfc3339() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def flatten(objects: Iterable[dict]) -> Iterable[dict]:
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            yield from flatten(obj["items"])
        else:
            yield obj


def read_objects(text: str) -> list[dict]:
    """Objects of a snapshot file: JSON or (multi-document) YAML, ``List``s allowed."""
    return [doc for doc in yaml.safe_load_all(text) if isinstance(doc, dict)]
