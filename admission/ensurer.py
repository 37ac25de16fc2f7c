"""Ensure the PodGroups that admitted pods name: the controller side of gangweb's admission.

The mutating webhook only sets ``spec.schedulingGroup.podGroupName`` and never writes an object
(``sideEffects: None``; docs/admission.md says why). Until the named PodGroup exists kube-scheduler keeps
the pod waiting, so a pass here, run every few seconds by Celery beat (``admission.tasks.ensure_podgroups``),
finds each named group missing from the snapshot and creates it, built by the same pure code the webhook's
inference uses (``admission.podgroups``): it reads the gang's owner (Job, JobSet, RayCluster, another
scheduler's PodGroup...: the owners of ``admission.sources``) when the pod alone does not give the gang size.

Idempotent: a group that exists (in the snapshot, or created meanwhile: the API answers 409) is left
as it is, and a pass that finds nothing missing makes no write. No Django import: the caller
(``admission.tasks``) passes the cluster, its objects and the admission policy, and records what came back.
The cluster is ``scheduler.cluster.Cluster`` (pure: a protocol and its error).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from admission import labels as L
from admission.mutate import grouped_by_controller, is_mirror_pod, opted_out
from admission.podgroups import API_VERSION as PODGROUP_API_VERSION
from admission.podgroups import owner_to_fetch, podgroup_for_pod
from admission.podview import readable_pod
from admission.policy import AdmissionPolicy
from scheduler import podstate, tracing
from scheduler.cluster import Cluster, ClusterError, KubeObject

CREATED = "created"
EXISTS = "exists"  # created by someone else since the snapshot (409 AlreadyExists)
NOT_OURS = "not-ours"  # the pods name a group gangweb did not choose: their controller or user creates it
WAITING = "waiting"  # the gang size is unknown for now (owner not found yet); the next pass tries again
FAILED = "failed"  # the cluster refused or did not answer


@dataclass(frozen=True)
class Ensured:
    """What one pass did about one missing PodGroup."""

    namespace: str
    name: str
    outcome: str
    message: str
    pods: int  # pods naming the group
    podgroup: KubeObject | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _is_podgroup(obj: KubeObject) -> bool:
    return (
        obj.get("kind") == "PodGroup" and obj.get("apiVersion", PODGROUP_API_VERSION) == PODGROUP_API_VERSION
    )


GroupKey = tuple[str, str]  # (namespace, PodGroup name)


def missing_podgroups(
    objects: Iterable[KubeObject], policy: AdmissionPolicy
) -> dict[GroupKey, list[KubeObject]]:
    """(namespace, PodGroup name) -> the live pods naming it, for every named group not in ``objects``.

    Namespaces the webhook never touches (kube-system, gangweb's own, the configured skips), mirror pods
    and opted-out pods are left alone here too.
    """
    objects = list(objects)
    existing = {
        ((o.get("metadata") or {}).get("namespace", ""), (o.get("metadata") or {}).get("name", ""))
        for o in objects
        if _is_podgroup(o)
    }
    missing: dict[GroupKey, list[KubeObject]] = {}
    for pod in objects:
        if pod.get("kind") != "Pod" or not isinstance(pod.get("metadata"), dict):
            continue
        view = readable_pod(pod)
        if view is None:
            continue
        namespace = view.metadata.namespace or ""
        group = view.spec.group_name
        if not group or not namespace or policy.skips(namespace) or (namespace, group) in existing:
            continue
        if is_mirror_pod(view.metadata) or opted_out(view.metadata) or not podstate.is_live(pod):
            continue
        missing.setdefault((namespace, group), []).append(pod)
    return missing


def _oldest_first(pods: list[KubeObject]) -> list[KubeObject]:
    return sorted(
        pods,
        key=lambda p: (
            (p.get("metadata") or {}).get("creationTimestamp") or "",
            (p.get("metadata") or {}).get("name") or "",
        ),
    )


class _OwnerCache:
    """Owners read during one pass: the pods of one workload (and several gangs of one RayCluster or
    LeaderWorkerSet) share one read."""

    def __init__(self, cluster: Cluster):
        self._cluster = cluster
        self._read: dict[tuple[str, str, str, str], KubeObject | None] = {}

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> KubeObject | None:
        key = (api_version, kind, namespace, name)
        if key not in self._read:
            self._read[key] = self._cluster.get_object(api_version, kind, namespace, name)
        return self._read[key]


def ensure_one(
    cluster: Cluster,
    namespace: str,
    name: str,
    pods: list[KubeObject],
    policy: AdmissionPolicy,
    owners: _OwnerCache | None = None,
) -> Ensured:
    """Build and create the PodGroup ``namespace/name`` that ``pods`` name."""
    owners = owners or _OwnerCache(cluster)
    pod = _oldest_first(pods)[0]  # every member gives the same group; the oldest is the likeliest to stay
    view = readable_pod(pod)  # read once for both calls below
    if view is None:
        return Ensured(
            namespace,
            name,
            NOT_OURS,
            f"pod {(pod.get('metadata') or {}).get('name')} is not of a "
            "Pod's shape; no rule of gangweb's can read it",
            len(pods),
        )
    controlled = grouped_by_controller(view.metadata)
    if controlled:
        return Ensured(namespace, name, NOT_OURS, controlled, len(pods))
    try:
        ref = owner_to_fetch(view, policy)
        owner = owners.get(ref.api_version, ref.kind, namespace, ref.name) if ref else None
        owner_groups = controller_groups(owner) if owner is not None else ""
        if owner_groups:
            return Ensured(namespace, name, NOT_OURS, owner_groups, len(pods))
        if ref and owner is None:
            return Ensured(
                namespace,
                name,
                WAITING,
                f"{ref.kind} {namespace}/{ref.name} ({ref.api_version}) not found: the gang size comes "
                "from it",
                len(pods),
            )
        try:
            podgroup = podgroup_for_pod(view, policy, owner)
        except ValueError as exc:
            return Ensured(namespace, name, WAITING, str(exc), len(pods))
        if podgroup is None or podgroup["metadata"].get("name") != name:
            return Ensured(
                namespace,
                name,
                NOT_OURS,
                f"pod {(pod.get('metadata') or {}).get('name')} names PodGroup {name}, which gangweb did "
                "not choose for it; its controller or user is expected to create it",
                len(pods),
            )
        podgroup["metadata"]["namespace"] = namespace
        started_ns = tracing.now_ns() if tracing.ON else 0
        created = cluster.create_object(podgroup)
        if started_ns and created:
            tracing.gang_span("podgroup ensured", namespace, name, started_ns, **{"gangweb.pods": len(pods)})
    except ClusterError as exc:
        return Ensured(namespace, name, FAILED, str(exc), len(pods))
    if not created:
        return Ensured(namespace, name, EXISTS, "created by someone else meanwhile", len(pods), podgroup)
    return Ensured(namespace, name, CREATED, describe(podgroup, len(pods)), len(pods), podgroup)


def controller_groups(owner: KubeObject) -> str:
    """Why ``owner``'s own controller makes its pods' PodGroup (KEP-6089), or "" when gangweb may: a Job
    with ``.spec.scheduling``, or any owner a parent workload delegated a group template to."""
    metadata = owner.get("metadata") or {}
    what = f"{owner.get('kind')} {metadata.get('namespace')}/{metadata.get('name')}"
    template = (metadata.get("annotations") or {}).get(L.GROUP_TEMPLATE_ANNOTATION)
    if template:
        return f"{what} has {L.GROUP_TEMPLATE_ANNOTATION}={template}: its controller makes its PodGroup"
    if owner.get("kind") == "Job" and (owner.get("spec") or {}).get("scheduling"):
        return f"{what} has .spec.scheduling: the Job controller makes its PodGroup"
    return ""


def describe(podgroup: KubeObject, pods: int) -> str:
    spec: dict[str, Any] = podgroup.get("spec") or {}
    annotations = (podgroup.get("metadata") or {}).get("annotations") or {}
    min_count = ((spec.get("schedulingPolicy") or {}).get("gang") or {}).get("minCount")
    disruption = next(iter(spec.get("disruptionMode") or {"single": {}}))
    text = (
        f"created PodGroup {podgroup['metadata']['name']} for {pods} waiting pod(s): minCount {min_count}, "
        f"disruptionMode {disruption}, preemptionPolicy {spec.get('preemptionPolicy', 'default')} "
        f"(source {annotations.get(L.GANG_SOURCE_ANNOTATION, '?')})"
    )
    planned_by_gangweb = annotations.get(L.PREEMPTION_POLICY_ANNOTATION)
    if planned_by_gangweb:
        text += f"; gangweb preempts for it: {planned_by_gangweb}"
        if spec.get("preemptionPolicy") != "Never":
            text += (
                "; warning: its PriorityClass lets kube-scheduler preempt for it too (give the class "
                "preemptionPolicy: Never, docs/design.md)"
            )
    return text


def ensure_podgroups(
    cluster: Cluster, objects: Iterable[KubeObject], policy: AdmissionPolicy
) -> list[Ensured]:
    """One pass over a snapshot: every missing group, in (namespace, name) order."""
    owners = _OwnerCache(cluster)
    results = []
    for (namespace, name), pods in sorted(missing_podgroups(objects, policy).items()):
        try:
            results.append(ensure_one(cluster, namespace, name, pods, policy, owners))
        except Exception as exc:  # one odd pod must not keep every other gang from its group
            results.append(Ensured(namespace, name, FAILED, f"unexpected error: {exc!r}", len(pods)))
    return results
