"""Apache YuniKorn gang scheduling (yunikorn-k8shim pkg/common/constants): the application id names the
gang, the task groups annotation sizes it (the sum of their ``minMember``)."""

from __future__ import annotations

import json
from functools import lru_cache

from admission.podview import ObjectMeta
from admission.sources.base import Claim, GangSource

APP_ID_LABEL = "applicationId"
APP_ID_KEY = "yunikorn.apache.org/app-id"  # a label or an annotation
TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
TASK_GROUPS = "yunikorn.apache.org/task-groups"


def min_members(task_groups: str) -> int | None:
    """Sum of ``minMember`` over the task groups JSON; None when it is not usable."""
    # A gang's pods repeat the same task groups; only short ones are cached (annotations are untrusted
    # and may be large).
    return _cached_min_members(task_groups) if len(task_groups) <= 4096 else _min_members(task_groups)


def _min_members(task_groups: str) -> int | None:
    try:
        groups = json.loads(task_groups)
    except (ValueError, RecursionError):
        return None
    if not isinstance(groups, list) or not groups:
        return None
    total = 0
    for group in groups:
        member = group.get("minMember") if isinstance(group, dict) else None
        if not isinstance(member, int) or isinstance(member, bool) or member < 0:
            return None
        total += member
    return total or None


_cached_min_members = lru_cache(maxsize=1024)(_min_members)


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    # YuniKorn gangs are declared by task groups; an application id alone is not a gang.
    if not (annotations.get(TASK_GROUPS) or annotations.get(TASK_GROUP_NAME)):
        return None
    app = labels.get(APP_ID_KEY, "") or annotations.get(APP_ID_KEY, "") or labels.get(APP_ID_LABEL, "")
    if not app:
        return None
    task_groups = annotations.get(TASK_GROUPS)
    return Claim(app, "yunikorn", min_members(task_groups) if isinstance(task_groups, str) else None)


SOURCE = GangSource(
    "yunikorn",
    claim,
    labels=frozenset({APP_ID_KEY, APP_ID_LABEL}),
    annotations=frozenset({TASK_GROUPS, TASK_GROUP_NAME, APP_ID_KEY}),
)
