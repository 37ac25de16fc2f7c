"""The Priority admission plugin's part for PodGroups, as a 1.37 kube-apiserver with the gate
``PodGroupPreemptionPolicy`` does it on create.

The real server resolves the PodGroup's PriorityClass (or the global default; else priority 0 and
``PreemptLowerPriority``), refuses (403) a ``spec.priority`` or ``spec.preemptionPolicy`` that differs from
what the class gives, and fills both. Defaulting runs first and sets an absent ``preemptionPolicy`` to
``PreemptLowerPriority``, so a group of a ``Never`` class must say ``Never`` itself. Objects loaded as a
snapshot or written by `Store.create` without `admit` skip this, like objects already in etcd.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.kube.resources import PODGROUPS, Resource

from . import errors

PREEMPT = "PreemptLowerPriority"


def _forbidden(name: str, message: str) -> errors.ApiError:
    return errors.ApiError(
        403,
        "Forbidden",
        f'podgroups.scheduling.k8s.io "{name}" is forbidden: {message}',
        details={"name": name, "group": "scheduling.k8s.io", "kind": "podgroups"},
    )


def admit_podgroup(resource: Resource, obj: dict, priority_classes: Iterable[dict]) -> None:
    """Check and fill ``obj`` (storage shape) in place when it is a scheduling.k8s.io PodGroup."""
    if resource.storage_key != PODGROUPS.storage_key:
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    name = (obj.get("metadata") or {}).get("name", "")
    classes = {(pc.get("metadata") or {}).get("name"): pc for pc in priority_classes}
    class_name = spec.get("priorityClassName")
    if class_name:
        chosen = classes.get(class_name)
        if chosen is None:
            raise _forbidden(name, f"no PriorityClass with name {class_name} was found")
    else:
        chosen = next((pc for _, pc in sorted(classes.items()) if pc.get("globalDefault")), None)
    priority = int(chosen.get("value", 0)) if chosen else 0
    policy = (chosen.get("preemptionPolicy") if chosen else None) or PREEMPT
    given_policy = spec.get("preemptionPolicy") or PREEMPT
    if spec.get("priority") is not None and spec["priority"] != priority:
        raise _forbidden(
            name,
            f"priority set in the pod group ({spec['priority']}) must match the priority computed "
            f"({priority}) based on the priority class set in the spec",
        )
    if given_policy != policy:
        raise _forbidden(
            name,
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod group "
            f"spec; priority admission controller computed {policy} from the given PriorityClass name",
        )
    spec["priority"] = priority
    spec["preemptionPolicy"] = policy
    if chosen is not None:
        spec["priorityClassName"] = chosen["metadata"]["name"]
