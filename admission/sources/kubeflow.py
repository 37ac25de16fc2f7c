"""Kubeflow training-operator v1 jobs (PyTorchJob, TFJob, MPIJob, ...): the job-name label names the gang; the
job sizes it as the operator sizes its own gangs: ``runPolicy.schedulingPolicy.minAvailable``, else the sum
of replicas over its replica specs (the pods it runs at once)."""

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

JOB_NAME = "training.kubeflow.org/job-name"
OPERATOR_NAME = "training.kubeflow.org/operator-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
GROUP = "kubeflow.org"
JOBS = (
    OwnerResource(GROUP, "v1", "pytorchjobs", "PyTorchJob"),
    OwnerResource(GROUP, "v1", "tfjobs", "TFJob"),
    OwnerResource(GROUP, "v2beta1", "mpijobs", "MPIJob"),
    OwnerResource(GROUP, "v1", "xgboostjobs", "XGBoostJob"),
    OwnerResource(GROUP, "v1", "paddlejobs", "PaddleJob"),
    OwnerResource(GROUP, "v1", "jaxjobs", "JAXJob"),
)
# A pod whose controller reference does not name its job says which operator made it.
_BY_OPERATOR = {f"{job.kind.lower()}-controller": job for job in JOBS}
_DEFAULT = JOBS[0]


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name = labels.get(JOB_NAME, "")
    if not name:
        return None
    controller = controller_of(metadata)
    if controller is not None and controller.name == name and controller.kind:
        # The owner itself says which kind and version (MPIJob is kubeflow.org/v2beta1, for one).
        owner = OwnerRef(controller.apiVersion or "kubeflow.org/v1", controller.kind, name)
    else:
        job = _BY_OPERATOR.get(labels.get(OPERATOR_NAME, ""), _DEFAULT)
        owner = OwnerRef(job.api_version, job.kind, name)
    return Claim(name, "kubeflow", None, owner)


def _replica_specs(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(field, replica type, replica spec) for every replica spec (``pytorchReplicaSpecs.Worker``...)."""
    return [
        (key, rtype, as_dict(replica))
        for key, replicas in spec.items()
        if key.endswith("ReplicaSpecs") and isinstance(replicas, dict)
        for rtype, replica in replicas.items()
    ]


def total_replicas(spec: dict[str, Any]) -> int:
    return sum(int_or(replica.get("replicas"), 1) for _, _, replica in _replica_specs(spec))


def min_available(spec: dict[str, Any]) -> int | None:
    value = int_or(as_dict(as_dict(spec.get("runPolicy")).get("schedulingPolicy")).get("minAvailable"), 0)
    return value if value > 0 else None


def gang_size(spec: dict[str, Any]) -> int:
    return min_available(spec) or total_replicas(spec)


def _capacity(spec: dict[str, Any]) -> Capacity:
    return Capacity(total_replicas(spec), "the sum of replicas over the replica specs")


def _templates(spec: dict[str, Any]) -> list[Template]:
    return [
        Template(f"{key}[{rtype}]", as_dict(replica.get("template")))
        for key, rtype, replica in _replica_specs(spec)
    ]


def _problems(spec: dict[str, Any], capacity: Capacity) -> list[str]:
    wanted = min_available(spec)
    if wanted is None or wanted <= capacity.pods:
        return []
    return [
        f"spec.runPolicy.schedulingPolicy.minAvailable is {wanted} but the replica specs total {capacity.pods} "
        f"pods, so the gang can never start; lower minAvailable to {capacity.pods} or add replicas"
    ]


SOURCE = GangSource(
    "kubeflow",
    claim,
    labels=frozenset({JOB_NAME}),
    owners=JOBS,
    size=lambda spec, metadata: gang_size(spec),
    controller=ControllerRules(_capacity, _templates, _problems),
)
