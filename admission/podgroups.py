"""The PodGroup a gang needs, built from one of its pods (and, when the pod does not say, its owner).

gangweb ensures PodGroups from the controller side rather than creating them inside the admission
request (docs/admission.md explains why): the pipeline sees a pod naming a PodGroup that does not exist,
calls ``owner_to_fetch(pod, policy)`` to learn which object sizes the gang (if any), reads it, and
creates ``podgroup_for_pod(pod, policy, owner)``. Everything here is pure.
"""

from __future__ import annotations

from typing import Any

from admission import labels as L
from admission.inference import Gang, OwnerRef, gang_of
from admission.podview import Pod, as_pod_view, controller_of, readable_pod
from admission.policy import AdmissionPolicy
from admission.sources import source_named

API_VERSION = "scheduling.k8s.io/v1beta1"


def owner_min_count(pod: Pod, gang: Gang, owner: dict[str, Any]) -> int | None:
    """The gang size the owning object implies (its source's size rule), or None when it does not say."""
    spec = owner.get("spec") if isinstance(owner, dict) else None
    source = source_named(gang.source)
    if not isinstance(spec, dict) or source is None or source.size is None:
        return None
    count = source.size(spec, pod.metadata)
    return count if count >= 1 else None


def resolve_min_count(pod: Pod, gang: Gang, owner: dict[str, Any] | None = None) -> int | None:
    if gang.min_count is not None:
        return gang.min_count
    return owner_min_count(pod, gang, owner) if owner is not None else None


def podgroup_for(
    pod: Pod | dict[str, Any], gang: Gang, owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The PodGroup object for ``gang``; raises ValueError when its size cannot be known (or ``pod`` is
    not a Pod's shape: ``PodViewError`` is a ValueError)."""
    pod = as_pod_view(pod)
    min_count = resolve_min_count(pod, gang, owner)
    if min_count is None:
        raise ValueError(
            f"gang {gang.name} ({gang.source}): size unknown; pass the owning "
            f"{gang.owner.kind if gang.owner else 'object'} or set {L.MIN_COUNT_ANNOTATION} on the pods"
        )
    metadata, pod_spec = pod.metadata, pod.spec
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {"minCount": min_count}},
        "disruptionMode": {gang.disruption_mode: {}},
    }
    if pod_spec.priorityClassName:
        spec["priorityClassName"] = pod_spec.priorityClassName
    if pod_spec.priority is not None:
        spec["priority"] = pod_spec.priority
    annotations = {L.GANG_SOURCE_ANNOTATION: gang.source}
    if pod_spec.preemptionPolicy in ("Never", "PreemptLowerPriority"):
        # Exactly the PriorityClass's (the pod's was computed from it on admission): a real API server
        # refuses any other, and defaults an absent one to PreemptLowerPriority.
        spec["preemptionPolicy"] = pod_spec.preemptionPolicy
    if gang.mode in ("enforce", "approve"):
        # gangweb plans preemption for this gang whatever its class says; the class's Never is how the
        # admin keeps kube-scheduler from preempting for it too (docs/design.md "modes").
        own = metadata.annotation_map.get(L.PREEMPTION_POLICY_ANNOTATION)
        annotations[L.PREEMPTION_POLICY_ANNOTATION] = "Never" if own == "Never" else "PreemptLowerPriority"
    podgroup_meta: dict[str, Any] = {
        "name": gang.name,
        "labels": {L.MANAGED_BY_LABEL: L.MANAGED_BY_VALUE},
        "annotations": annotations,
    }
    if metadata.namespace:
        podgroup_meta["namespace"] = metadata.namespace
    controller = controller_of(metadata)
    if controller is not None and gang.owner and controller.kind == gang.owner.kind and controller.uid:
        # Deleted with its workload; not "controller": the workload's own controller does not manage it.
        podgroup_meta["ownerReferences"] = [
            {
                "apiVersion": controller.apiVersion or gang.owner.api_version,
                "kind": gang.owner.kind,
                "name": controller.name or gang.owner.name,
                "uid": controller.uid,
            }
        ]
    return {"apiVersion": API_VERSION, "kind": "PodGroup", "metadata": podgroup_meta, "spec": spec}


def owner_to_fetch(pod: Pod | dict[str, Any], policy: AdmissionPolicy) -> OwnerRef | None:
    """For the controller side: the object to read before ``podgroup_for_pod`` can size the gang."""
    view = readable_pod(pod)
    if view is None:
        return None
    gang = gang_of(view.metadata, view.metadata.namespace or "", policy)
    return gang.owner if gang is not None and gang.min_count is None else None


def podgroup_for_pod(
    pod: Pod | dict[str, Any], policy: AdmissionPolicy, owner: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The PodGroup to ensure for an admitted pod, or None when it is not gangweb's to create: no
    gang claims the pod, the pod is not a Pod's shape, or it names a group gangweb did not choose (set by
    its controller or user). Raises ValueError when the size needs ``owner`` (see ``owner_to_fetch``)
    and it was not given."""
    view = readable_pod(pod)
    if view is None:
        return None
    gang = gang_of(view.metadata, view.metadata.namespace or "", policy)
    if gang is None:
        return None
    named = view.spec.group_name
    if named and named != gang.name:
        return None
    return podgroup_for(view, gang, owner)
