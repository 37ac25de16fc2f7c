"""JobSet (kubernetes-sigs/jobset api/jobset/v1alpha2) and the Kubeflow Trainer's TrainJob, which runs as a
JobSet of the same name: the JobSet-name label names the gang, the JobSet sizes it.

A TrainJob's runtime labels each replicated job with its step; only the ``trainer`` step is the gang
(initializers finish before it starts), so an initializer's pod is no gang member.

**The gang size (one rule, for the PodGroup and for the "can never start" check):** the pods of the member
replicated jobs that the JobSet creates first, replicas x min(parallelism, completions) each. A replicated
job with ``dependsOn`` a member is created only once that member is Ready or Complete, and with
``startupPolicyOrder: InOrder`` each one only once the previous one is ready (the JobSet API). Neither can
happen while kube-scheduler holds the first pods back waiting for the rest of their gang, so a minCount that
counted them would never be met: the gang that starts together is the jobs that wait for no other member.
"""

from __future__ import annotations

from typing import Any

from admission.podview import ObjectMeta
from admission.sources.base import (
    NO_GANG,
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
from admission.sources.job import job_pods

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
# Set on JobSet pods beside the name; not needed to find the gang.
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
# Kubeflow Trainer v2: each replicated job's step (on its template, and so on its pods).
TRAINJOB_STEP = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINJOB_TRAINER_STEP = "trainer"
JOBSET = OwnerResource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
_API_VERSION = JOBSET.api_version


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name = labels.get(JOBSET_NAME, "")
    if not name:
        return None
    step = labels.get(TRAINJOB_STEP, "")
    if step and step != TRAINJOB_TRAINER_STEP:
        return NO_GANG  # a TrainJob's initializer: it finishes before the gang starts
    return Claim(name, "trainjob" if step else "jobset", None, OwnerRef(_API_VERSION, "JobSet", name))


def _step(replicated_job: dict[str, Any]) -> Any:
    return as_dict(as_dict(as_dict(replicated_job.get("template")).get("metadata")).get("labels")).get(
        TRAINJOB_STEP
    )


def members(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The replicated jobs whose pods join the gang: all of them, or a TrainJob's trainer step."""
    replicated = [r for r in spec.get("replicatedJobs") or [] if isinstance(r, dict)]
    if any(_step(r) for r in replicated):
        return [r for r in replicated if _step(r) == TRAINJOB_TRAINER_STEP]
    return replicated


def starting_members(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The members the JobSet creates before any other member is ready or complete."""
    gang = members(spec)
    if as_dict(spec.get("startupPolicy")).get("startupPolicyOrder") == "InOrder":
        return gang[:1]
    names = {r.get("name") for r in gang}
    return [r for r in gang if not any(as_dict(d).get("name") in names for d in r.get("dependsOn") or [])]


def gang_pods(spec: dict[str, Any]) -> int:
    """The gang size: pods of the starting members (module docstring)."""
    return sum(
        int_or(r.get("replicas"), 1) * job_pods(as_dict(r.get("template")).get("spec"))
        for r in starting_members(spec)
    )


def _capacity(spec: dict[str, Any]) -> Capacity:
    return Capacity(
        gang_pods(spec),
        "the replicas x parallelism of the spec.replicatedJobs that start together "
        "(not waiting on another one through dependsOn or startupPolicyOrder InOrder)",
    )


def _templates(spec: dict[str, Any]) -> list[Template]:
    # Every member's template: members created later still join the same PodGroup.
    return [
        Template(
            f"replicatedJobs[{r.get('name')}]",
            as_dict(as_dict(as_dict(r.get("template")).get("spec")).get("template")),
        )
        for r in members(spec)
    ]


SOURCE = GangSource(
    "jobset",
    claim,
    labels=frozenset({JOBSET_NAME}),
    owners=(JOBSET,),
    size=lambda spec, metadata: gang_pods(spec),
    controller=ControllerRules(_capacity, _templates),
    aliases=("trainjob",),
)
