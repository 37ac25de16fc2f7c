"""The last guard of tenant isolation: nothing in an answer names a namespace its reader does not see.

Queries already cut rows to the reader's scope; what is left are the names *inside* a visible row: a
plan of team A lists the victims it took from team B, a ledger message says "dry run team-b/pod-0".
``redact`` walks an answer and replaces them:

- an object with a ``namespace`` the reader does not see keeps its numbers and loses its names
  (``namespace``, ``name``, ``pods``, ``pod`` and ``podGroup`` become null, ``otherNamespace`` is true);
- a ``NAMESPACE/NAME`` in any string or key, whose namespace the reader does not see, becomes
  ``OTHER`` ("in use, other namespace" on the GPU map); so does a namespace the reader does not see in
  an API path (``/namespaces/team-b/pods/x``, which a client's transport error quotes) or in the words
  Kubernetes names it with (``namespaces "team-b" not found``, ``in namespace team-b because``);
- text that speaks of another namespace's object carries the API server's answer about it, which names
  that object without its namespace: inside a hidden object, in a string naming a hidden
  ``NAMESPACE/NAME``, and in an object whose ``pod`` or ``unit`` is one, a name in double quotes
  (``pods "train-3" not found``, ``PodDisruptionBudget "train-pdb"``), the budget named by the
  Eviction API's refusal (``The disruption budget train-pdb needs 4 healthy pods``) and the hidden
  object's own bare name become ``OTHER`` too.

A namespace is recognised in a string when it is a DNS label starting with a letter, not preceded by
a dot or a slash (so ``scheduling.k8s.io/v1beta1`` and ``0/4 nodes`` are left alone).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gangweb.access.scope import Scope

OTHER = "(other namespace)"
_NAME_KEYS = ("namespace", "name", "pods", "pod", "podGroup", "podUid", "gang", "victimUnit")
# The keys that say which object an entry is about (an eviction's pod, its victim unit).
_SUBJECT_KEYS = ("pod", "unit", "victimUnit")
_KEY = re.compile(r"(?<![\w./-])([a-z][a-z0-9-]{0,62})/([A-Za-z0-9][-A-Za-z0-9_.]*)")
_QUOTED = re.compile(r'"[A-Za-z0-9][-A-Za-z0-9_.]{0,252}"')
_LABEL = r"[a-z0-9][a-z0-9-]{0,62}"
# /namespaces/NS and the RESOURCE/NAME after it, as in a request's URL
_PATH = re.compile(rf"(?<=/namespaces/)({_LABEL})((?:/[A-Za-z0-9][-A-Za-z0-9_.]*){{0,2}})")
# namespaces "NS" not found; ... in the namespace "NS"; unable to create new content in namespace NS because ...
_NAMESPACE_WORDS = re.compile(rf'\b(namespaces? )(?:"({_LABEL})"|({_LABEL})(?= because\b))')
# policy/v1 Eviction's causes (pkg/registry/core/pod/storage/eviction.go) name the budget unquoted
_BUDGET = re.compile(
    r"(?<=\bdisruption budget )[a-z0-9][-a-z0-9.]*(?= (?:needs \d|is still being processed))"
)


def redact(value: Any, scope: Scope) -> Any:
    if scope.all_namespaces:
        return value
    return _walk(value, scope)


def redact_text(text: str, scope: Scope) -> str:
    if scope.all_namespaces:
        return text
    return _text(text, scope, None)


def _text(text: str, scope: Scope, about: frozenset[str] | None) -> str:
    """``about`` is None for text of a visible object, else the bare names of the hidden one it is in."""
    found: set[str] = set()

    def key(match: re.Match[str]) -> str:
        if scope.sees(match.group(1)):
            return match.group(0)
        found.add(match.group(2).rstrip("."))
        return OTHER

    if "/" in text:
        text = _KEY.sub(key, text)
        if "/namespaces/" in text:
            text = _PATH.sub(lambda m: m.group(0) if scope.sees(m.group(1)) else OTHER, text)
    if "namespace" in text:
        text = _NAMESPACE_WORDS.sub(
            lambda m: m.group(0) if scope.sees(m.group(2) or m.group(3)) else m.group(1) + OTHER, text
        )
    if about is None and not found:
        return text
    if '"' in text:
        text = _QUOTED.sub(OTHER, text)
    if "disruption budget" in text:
        text = _BUDGET.sub(OTHER, text)
    names = sorted({*(about or ()), *found} - {""}, key=len, reverse=True)
    if names:  # the bare names, never inside an OTHER already written
        bare = re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-]|\.[\w-])")
        text = OTHER.join(bare.sub(OTHER, part) for part in text.split(OTHER))
    return text


def _bare_names(values: Iterable[Any]) -> set[str]:
    """The names in ``name``, ``pod``, ``pods``... values, without their namespace or kind."""
    names: set[str] = set()
    for value in values:
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, str) and item:
                names.add(item.rpartition(" ")[2].rpartition("/")[2])
    return names


def _walk(value: Any, scope: Scope, about: frozenset[str] | None = None) -> Any:
    if isinstance(value, str):
        return _text(value, scope, about)
    if isinstance(value, dict):
        namespace = value.get("namespace")
        hidden = isinstance(namespace, str) and namespace != "" and not scope.sees(namespace)
        if hidden:
            about = (about or frozenset()) | _bare_names(value.get(k) for k in _NAME_KEYS if k != "namespace")
        else:
            subjects = [
                m.group(2).rstrip(".")
                for k in _SUBJECT_KEYS
                if isinstance(value.get(k), str)
                for m in _KEY.finditer(value[k])
                if not scope.sees(m.group(1))
            ]
            if subjects:
                about = (about or frozenset()) | frozenset(subjects)
        out = {}
        for key, item in value.items():
            if hidden and key in _NAME_KEYS:
                out[key] = None
            else:
                out[redact_text(key, scope) if isinstance(key, str) else key] = _walk(item, scope, about)
        if hidden:
            out["otherNamespace"] = True
        return out
    if isinstance(value, list | tuple):
        return [_walk(item, scope, about) for item in value]
    return value
