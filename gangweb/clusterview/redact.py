"""The last guard of tenant isolation: nothing in an answer names a namespace its reader does not see.

Queries already cut rows to the reader's scope; what is left are the names *inside* a visible row: a
plan of team A lists the victims it took from team B, a ledger message says "dry run team-b/pod-0".
``redact`` walks an answer and replaces them:

- an object with a ``namespace`` the reader does not see keeps its numbers and loses its names
  (``namespace``, ``name``, ``pods``, ``pod`` and ``podGroup`` become null, ``otherNamespace`` is true);
- a ``NAMESPACE/NAME`` in any string or key, whose namespace the reader does not see, becomes
  ``OTHER`` ("in use, other namespace" on the GPU map);
- inside such a hidden object, a name in double quotes becomes ``OTHER`` too: that is how the API
  server names the object of its answer (``pods "train-3" not found``), and a ledger entry of another
  namespace carries that answer in its message.

A namespace is recognised in a string when it is a DNS label starting with a letter, not preceded by
a dot or a slash (so ``scheduling.k8s.io/v1beta1`` and ``0/4 nodes`` are left alone).
"""

from __future__ import annotations

import re
from typing import Any

from gangweb.access.scope import Scope

OTHER = "(other namespace)"
_NAME_KEYS = ("namespace", "name", "pods", "pod", "podGroup", "podUid", "gang", "victimUnit")
_KEY = re.compile(r"(?<![\w./-])([a-z][a-z0-9-]{0,62})/([A-Za-z0-9][-A-Za-z0-9_.]*)")
_QUOTED = re.compile(r'"[A-Za-z0-9][-A-Za-z0-9_.]{0,252}"')


def redact(value: Any, scope: Scope) -> Any:
    if scope.all_namespaces:
        return value
    return _walk(value, scope)


def redact_text(text: str, scope: Scope) -> str:
    if scope.all_namespaces or "/" not in text:
        return text
    return _KEY.sub(lambda m: m.group(0) if scope.sees(m.group(1)) else OTHER, text)


def _walk(value: Any, scope: Scope, inside_hidden: bool = False) -> Any:
    if isinstance(value, str):
        text = redact_text(value, scope)
        return _QUOTED.sub(OTHER, text) if inside_hidden and '"' in text else text
    if isinstance(value, dict):
        namespace = value.get("namespace")
        hidden = isinstance(namespace, str) and namespace != "" and not scope.sees(namespace)
        quoted = inside_hidden or hidden
        out = {}
        for key, item in value.items():
            if hidden and key in _NAME_KEYS:
                out[key] = None
            else:
                out[redact_text(key, scope) if isinstance(key, str) else key] = _walk(item, scope, quoted)
        if hidden:
            out["otherNamespace"] = True
        return out
    if isinstance(value, list | tuple):
        return [_walk(item, scope, inside_hidden) for item in value]
    return value
