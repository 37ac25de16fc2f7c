"""Workload controllers seen from their own objects: how many pods they can run at once, their pod
templates, and the GPU shape each template asks for.

Used by the validating webhook to reject a gang whose size its controller can never reach (a Job with
parallelism 4 and ``gangweb.io/min-count: 8`` would wait forever) or whose templates give its members
different priorities or schedulers (the scheduler would fail the whole group), and to warn about mixed
GPU shapes. These are read from the controller's own object, the one place all of a gang's templates
are seen together; the pod webhook compares each pod with nothing but its PodGroup.
"""

from __future__ import annotations

import operator
from typing import Any

import msgspec

from admission import labels as L
from admission.inference import positive_int
from admission.podgroups import int_or, job_pods
from admission.podview import PodSpec, PodViewError, pod_view, resource_requirements

# (group, kind) of the controllers whose objects the validating webhook checks.
JOB = ("batch", "Job")
JOBSET = ("jobset.x-k8s.io", "JobSet")
LWS = ("leaderworkerset.x-k8s.io", "LeaderWorkerSet")
KUBEFLOW_GROUP = "kubeflow.org"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def requested_resources(spec: PodSpec) -> tuple[msgspec.Raw, ...]:
    """Each container's ``resources`` as JSON text. Pods whose tuples are equal ask for the same GPU
    shape: comparing them costs far less than working the shapes out."""
    return tuple(map(_RESOURCES, spec.containers or ()))  # map: no generator frame per pod


_RESOURCES = operator.attrgetter("resources")


def gpu_shape(resources: tuple[msgspec.Raw, ...]) -> tuple[tuple[str, str], ...]:
    """The GPU-like extended resources a pod asks for (see ``requested_resources``), as sorted
    (resource, quantity) pairs."""
    totals: dict[str, int | str] = {}
    for raw in resources:
        decoded = resource_requirements(raw)
        requests, limits = decoded.requests or {}, decoded.limits or {}
        # Extended resources: requests default to limits, and the two must be equal when both are set.
        for source, skip in ((requests, None), (limits, requests)):
            for resource, quantity in source.items():
                if "gpu" not in resource.lower() or (skip is not None and resource in skip):
                    continue
                text = str(quantity)
                previous = totals.get(resource, 0)
                totals[resource] = previous + int(text) if text.isdigit() and isinstance(previous, int) else text
    if not totals:
        return ()
    return tuple(sorted((resource, str(count)) for resource, count in totals.items() if count not in (0, "0")))


def describe_shape(shape: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{count}x {resource}" for resource, count in shape) or "no GPU"


def pod_templates(kind: tuple[str, str], spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label for messages, pod template) pairs of a controller object."""
    if kind == JOB:
        return [("template", _dict(spec.get("template")))]
    if kind == JOBSET:
        return [
            (f"replicatedJobs[{_dict(r).get('name')}]", _dict(_dict(_dict(_dict(r).get("template")).get("spec")).get("template")))
            for r in spec.get("replicatedJobs") or []
        ]
    if kind == LWS:
        lwt = _dict(spec.get("leaderWorkerTemplate"))
        return [(name, _dict(lwt.get(name))) for name in ("leaderTemplate", "workerTemplate") if lwt.get(name)]
    if kind[0] == KUBEFLOW_GROUP:
        return [
            (f"{key}[{rtype}]", _dict(_dict(replica).get("template")))
            for key, replicas in spec.items()
            if key.endswith("ReplicaSpecs") and isinstance(replicas, dict)
            for rtype, replica in replicas.items()
        ]
    return []


def capacity(kind: tuple[str, str], spec: dict[str, Any]) -> tuple[int, str] | None:
    """How many pods the controller runs at once, and the field(s) that decide it."""
    if kind == JOB:
        return job_pods(spec), "spec.parallelism (capped by spec.completions)"
    if kind == JOBSET:
        total = sum(
            int_or(_dict(r).get("replicas"), 1) * job_pods(_dict(_dict(r).get("template")).get("spec"))
            for r in spec.get("replicatedJobs") or []
        )
        return total, "the replicas x parallelism of spec.replicatedJobs"
    if kind == LWS:
        return int_or(_dict(spec.get("leaderWorkerTemplate")).get("size"), 1), "spec.leaderWorkerTemplate.size"
    if kind[0] == KUBEFLOW_GROUP:
        total = sum(
            int_or(_dict(replica).get("replicas"), 1)
            for key, replicas in spec.items()
            if key.endswith("ReplicaSpecs") and isinstance(replicas, dict)
            for replica in replicas.values()
        )
        return total, "the sum of replicas over the replica specs"
    return None


def controller_problems(kind: tuple[str, str], obj: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reasons to reject, warnings) for a controller object."""
    spec = _dict(obj.get("spec"))
    limit = capacity(kind, spec)
    if limit is None:
        return [], []
    pods, decided_by = limit
    problems: list[str] = []
    shapes: dict[tuple[tuple[str, str], ...], str] = {}
    # value -> the first template with it: priorityClassName ("" unset), schedulerName (unset: the default)
    classes: dict[str, str] = {}
    schedulers: dict[str, str] = {}
    for where, template in pod_templates(kind, spec):
        annotations = _dict(_dict(template.get("metadata")).get("annotations"))
        for key in (L.MIN_COUNT_ANNOTATION, L.KUEUE_POD_GROUP_COUNT_ANNOTATION):
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
        problems.append(f"the gang's pod templates set different priorityClassNames ({listed}); give every member "
                        "the same priorityClassName, or the scheduler fails the whole group")  # fmt: skip
    if len(schedulers) > 1:
        listed = "; ".join(f"{where}: {name}" for name, where in schedulers.items())
        problems.append(f"the gang's pod templates set different schedulerNames ({listed}); one scheduler must "
                        "place the whole gang: use the same schedulerName")  # fmt: skip
    if kind[0] == KUBEFLOW_GROUP:
        min_available = _dict(_dict(spec.get("runPolicy")).get("schedulingPolicy")).get("minAvailable")
        if isinstance(min_available, int) and min_available > pods:
            problems.append(
                f"spec.runPolicy.schedulingPolicy.minAvailable is {min_available} but the replica specs total "
                f"{pods} pods, so the gang can never start; lower minAvailable to {pods} or add replicas"
            )
    warnings = []
    if len(shapes) > 1:
        listed = "; ".join(f"{where}: {describe_shape(shape)}" for shape, where in shapes.items())
        warnings.append(f"gang members ask for different GPU shapes ({listed})"[:250])
    return problems, warnings
