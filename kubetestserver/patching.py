"""The three PATCH flavours the API server accepts for built-in types, applied to plain dicts.

Strategic merge is simplified to what the Kubernetes schemas say for the lists gangweb and the
tests touch: lists of objects with a merge key are merged element-wise, ``finalizers`` is merged
as a set, every other list is replaced; ``$patch: delete|replace`` and ``$setElementOrder``
directives are understood. Server-side apply is not supported (answered 415).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
SUPPORTED = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)

# patchMergeKey of list fields in the core and scheduling schemas, by field name.
MERGE_KEYS = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "ownerReferences": "uid",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "resourceClaims": "name",
    "resourceClaimStatuses": "name",
    "podGroupTemplates": "name",
    "addresses": "type",
    "taints": "key",
}
SET_LISTS = {"finalizers"}


class PatchError(ValueError):
    """The patch cannot be applied (answered 422/400 by the server)."""


def apply_patch(content_type: str, original: dict, patch: Any) -> dict:
    content_type = content_type.split(";")[0].strip()
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise PatchError("a JSON patch must be a list of operations")
        try:
            return jsonpatch.apply_patch(original, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise PatchError(str(exc)) from exc
    if not isinstance(patch, dict):
        raise PatchError("a merge patch must be a JSON object")
    if content_type == MERGE_PATCH:
        return merge_patch(original, patch)
    if content_type == STRATEGIC_MERGE_PATCH:
        return strategic_merge(original, patch)
    raise PatchError(f"unsupported patch type {content_type!r}")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge(target: Any, patch: dict) -> Any:
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key == "$retainKeys":
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in (value or [])]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _merge_keyed_list(result.get(key) or [], value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in SET_LISTS:
            existing = list(result.get(key) or [])
            result[key] = existing + [v for v in value if v not in existing]
        else:
            result[key] = copy.deepcopy(value)
    return result


def _merge_keyed_list(current: list, patch: list, merge_key: str) -> list:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    merged = [copy.deepcopy(i) for i in current]
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise PatchError(f"list element without merge key {merge_key!r}: {item!r}")
        index = next(
            (n for n, existing in enumerate(merged) if existing.get(merge_key) == item[merge_key]), None
        )
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append(copy.deepcopy(item))
        else:
            merged[index] = strategic_merge(merged[index], item)
    return merged
