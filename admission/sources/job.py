"""batch/v1 Job, parallel and Indexed: the controller owner reference names the gang; the Job's
parallelism (capped by completions) sizes it.

The legacy ``job-name`` label alone is not enough: other operators set it too. Every Job pod joins a gang,
a parallelism-1 Job's included (a group of one): the pod cannot tell its Job's parallelism.
"""

from __future__ import annotations

from typing import Any

from admission.podview import ObjectMeta, controller_of
from admission.sources.base import (
    Capacity,
    Claim,
    ControllerRules,
    GangSource,
    OwnerRef,
    OwnerResource,
    Template,
    as_dict,
    int_or,
)

# Set by the Job controller (kubernetes/kubernetes pkg/controller/job); not needed to find the gang.
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB = OwnerResource("batch", "v1", "jobs", "Job")


def job_pods(job_spec: Any) -> int:
    """Pods a Job runs at once: parallelism (default 1), capped by completions when set."""
    spec = as_dict(job_spec)
    parallelism = int_or(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return (
        min(parallelism, completions)
        if isinstance(completions, int) and not isinstance(completions, bool)
        else parallelism
    )


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    if not metadata.ownerReferences:
        return None
    controller = controller_of(metadata)
    if (
        controller is None
        or controller.kind != "Job"
        or controller.apiVersion != "batch/v1"
        or not controller.name
    ):
        return None
    return Claim(controller.name, "job", None, OwnerRef("batch/v1", "Job", controller.name))


def _capacity(spec: dict[str, Any]) -> Capacity:
    return Capacity(job_pods(spec), "spec.parallelism (capped by spec.completions)")


def _templates(spec: dict[str, Any]) -> list[Template]:
    return [Template("template", as_dict(spec.get("template")))]


SOURCE = GangSource(
    "job",
    claim,
    owners=(JOB,),
    size=lambda spec, metadata: job_pods(spec),
    controller=ControllerRules(_capacity, _templates, versions=("v1",)),
)
