"""The gang key: a gang's identity, ``NAMESPACE/NAME`` of its PodGroup (docs/glossary.md "gang key").

One type, so that a signature says it takes a gang key and not any string, and one place that builds and
splits it. A plain ``str`` at run time: dictionaries, JSON and the database carry it unchanged. No imports,
so the webhook and every other light reader can use it without loading the engine.
"""

from __future__ import annotations

from typing import NewType

GangKey = NewType("GangKey", str)


def gang_key_of(namespace: str, name: str) -> GangKey:
    """The key of PodGroup ``name`` in ``namespace``."""
    return GangKey(f"{namespace}/{name}")


def split_gang_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a gang key; ValueError naming the text when it is not ``NAMESPACE/NAME``."""
    namespace, sep, name = key.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"expected NAMESPACE/NAME, got {key!r}")
    return namespace, name


def parse_gang_key(text: str) -> GangKey:
    """``text`` as a gang key once it is ``NAMESPACE/NAME`` (a reader's input); ValueError otherwise."""
    split_gang_key(text)
    return GangKey(text)
