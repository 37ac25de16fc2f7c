"""Workload controllers seen from their own objects: how many pods they can run at once, their pod
templates, and the GPU shape each template asks for.

Used by the validating webhook to reject a gang whose size its controller can never reach (a Job with
parallelism 4 and ``gangweb.io/min-count: 8`` would wait forever) or whose templates give its members
different priorities or schedulers (the scheduler would fail the whole group), and to warn about mixed
GPU shapes. These are read from the controller's own object, the one place all of a gang's templates
are seen together; the pod webhook compares each pod with nothing but its PodGroup. Each controller's
capacity and pod templates are its gang source's rules (``admission.sources``): the same module that sizes
its PodGroups, so the check and the group cannot disagree.
"""

from __future__ import annotations

import operator
from typing import Any

import msgspec

from admission.podview import PodSpec, PodViewError, pod_view, resource_requirements
from admission.sources import SIZE_ANNOTATIONS, GangSource
from admission.sources.base import as_dict, positive_int
from scheduler.engine.resources import is_gpu


def requested_resources(spec: PodSpec) -> tuple[msgspec.Raw, ...]:
    """Each container's ``resources`` as JSON text. Pods whose tuples are equal ask for the same GPU
    shape: comparing them costs far less than working the shapes out."""
    return tuple(map(_RESOURCES, spec.containers or ()))  # map: no generator frame per pod


_RESOURCES = operator.attrgetter("resources")


def gpu_shape(resources: tuple[msgspec.Raw, ...]) -> tuple[tuple[str, str], ...]:
    """The GPUs a pod asks for (see ``requested_resources``), as sorted (resource, quantity) pairs."""
    totals: dict[str, int | str] = {}
    for raw in resources:
        decoded = resource_requirements(raw)
        requests, limits = decoded.requests or {}, decoded.limits or {}
        # Extended resources: requests default to limits, and the two must be equal when both are set.
        for source, skip in ((requests, None), (limits, requests)):
            for resource, quantity in source.items():
                if not is_gpu(resource) or (skip is not None and resource in skip):
                    continue
                text = str(quantity)
                previous = totals.get(resource, 0)
                totals[resource] = (
                    previous + int(text) if text.isdigit() and isinstance(previous, int) else text
                )
    if not totals:
        return ()
    return tuple(
        sorted((resource, str(count)) for resource, count in totals.items() if count not in (0, "0"))
    )


def describe_shape(shape: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{count}x {resource}" for resource, count in shape) or "no GPU"


def controller_problems(source: GangSource, obj: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reasons to reject, warnings) for an object of the controller ``source`` reviews."""
    rules = source.controller
    if rules is None:
        return [], []
    spec = as_dict(obj.get("spec"))
    capacity = rules.capacity(spec)
    pods, decided_by = capacity.pods, capacity.decided_by
    problems: list[str] = []
    shapes: dict[tuple[tuple[str, str], ...], str] = {}
    # value -> the first template with it: priorityClassName ("" unset), schedulerName (unset: the default)
    classes: dict[str, str] = {}
    schedulers: dict[str, str] = {}
    for where, template in rules.templates(spec):
        annotations = as_dict(as_dict(template.get("metadata")).get("annotations"))
        for key in SIZE_ANNOTATIONS:
            raw = annotations.get(key)
            if raw is None:
                continue
            wanted = positive_int(raw)
            if wanted is None:
                problems.append(f"{where}: annotation {key} is {raw!r}; set a whole number >= 1")
            elif wanted > pods:
                problems.append(
                    f"{where}: annotation {key} asks for {wanted} pods together, but {decided_by} allows only "
                    f"{pods} at once, so the gang can never start; lower {key} to {pods} or raise the controller to {wanted}"
                )
        try:
            pod_spec = pod_view(template).spec
        except PodViewError as error:
            problems.append(f"{where}: not a valid pod template: {str(error).replace('$', where)}")
            continue
        shape = gpu_shape(requested_resources(pod_spec))
        if shape:
            shapes.setdefault(shape, where)
        classes.setdefault(pod_spec.priorityClassName or "", where)
        # Unset means the default scheduler, and the apiserver defaults it before admission anyway.
        schedulers.setdefault(pod_spec.schedulerName or "default-scheduler", where)
    if len(classes) > 1:
        listed = "; ".join(f"{where}: {name or 'none'}" for name, where in classes.items())
        problems.append(
            f"the gang's pod templates set different priorityClassNames ({listed}); give every member "
            "the same priorityClassName, or the scheduler fails the whole group"
        )
    if len(schedulers) > 1:
        listed = "; ".join(f"{where}: {name}" for name, where in schedulers.items())
        problems.append(
            f"the gang's pod templates set different schedulerNames ({listed}); one scheduler must "
            "place the whole gang: use the same schedulerName"
        )
    problems.extend(rules.problems(spec, capacity))
    warnings = []
    if len(shapes) > 1:
        listed = "; ".join(f"{where}: {describe_shape(shape)}" for shape, where in shapes.items())
        warnings.append(f"gang members ask for different GPU shapes ({listed})"[:250])
    return problems, warnings
