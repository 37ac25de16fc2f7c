"""The Kubernetes resources gangweb reads and writes, described once for the adapter and the test server.

Each entry names where a resource lives on the API (group, version, plural) and how it behaves
(namespaced, status subresource). The adapter lists/watches ``SNAPSHOT_RESOURCES``; the test server
serves every entry of ``RESOURCES``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    has_status: bool = True
    # Several API versions of one resource share storage (events vs events.k8s.io); the store keys by this.
    storage: str = ""
    # DELETE answers with the deleted object (pods) instead of a Status.
    returns_deleted_object: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> str:
        return self.storage or f"{self.plural}.{self.group}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def collection_path(self, namespace: str | None = None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"


NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod", returns_deleted_object=True)
EVENTS = Resource("", "v1", "events", "Event", has_status=False, storage="events")
EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event", has_status=False, storage="events")
PODGROUPS = Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")
WORKLOADS = Resource("scheduling.k8s.io", "v1beta1", "workloads", "Workload", has_status=False)
COMPOSITE_PODGROUPS = Resource("scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup")
PDBS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False, has_status=False
)
RESOURCE_CLAIMS = Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
# DRA (resource.k8s.io/v1, GA in 1.34): read only; gangweb never writes them (get, list, watch in RBAC).
RESOURCE_CLAIM_TEMPLATES = Resource(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", has_status=False
)
RESOURCE_SLICES = Resource(
    "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False, has_status=False
)
DEVICE_CLASSES = Resource(
    "resource.k8s.io", "v1", "deviceclasses", "DeviceClass", namespaced=False, has_status=False
)

# RBAC: gangweb lists RoleBindings to know which namespaces a Kubernetes identity is bound in
# (gangweb/access/kube.py); the test server evaluates SubjectAccessReviews against all four.
_RBAC = "rbac.authorization.k8s.io"
ROLES = Resource(_RBAC, "v1", "roles", "Role", has_status=False)
ROLE_BINDINGS = Resource(_RBAC, "v1", "rolebindings", "RoleBinding", has_status=False)
CLUSTER_ROLES = Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False, has_status=False)
CLUSTER_ROLE_BINDINGS = Resource(
    _RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False, has_status=False
)
RBAC_RESOURCES: tuple[Resource, ...] = (ROLES, ROLE_BINDINGS, CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS)

# The objects that size a gang when its pods do not say (admission.podgroups.owner_to_fetch): workload
# controllers and other gang schedulers' PodGroups. Read (never listed or watched) by the PodGroup ensurer;
# served by the test server as plain custom objects (no schema: a real server checks them against a CRD).
JOBS = Resource("batch", "v1", "jobs", "Job")
VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
KAI_PODGROUPS = Resource("scheduling.run.ai", "v2alpha2", "podgroups", "PodGroup")  # KAI-Scheduler
CUSTOM_OWNER_RESOURCES: tuple[Resource, ...] = (
    Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    Resource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet"),
    Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),
    Resource("kubeflow.org", "v1", "tfjobs", "TFJob"),
    Resource("kubeflow.org", "v1", "xgboostjobs", "XGBoostJob"),
    Resource("kubeflow.org", "v1", "paddlejobs", "PaddleJob"),
    Resource("kubeflow.org", "v1", "jaxjobs", "JAXJob"),
    Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob"),
    Resource("ray.io", "v1", "rayclusters", "RayCluster"),
    Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup"),  # scheduler-plugins coscheduling
    VOLCANO_PODGROUPS,
    KAI_PODGROUPS,
)
OWNER_RESOURCES: tuple[Resource, ...] = (JOBS, *CUSTOM_OWNER_RESOURCES)

# The queue managers' kinds the queue read model reads (scheduler/queues, docs/queues.md): served by the test
# server in their real shapes; the adapter watches those a cluster serves (``QUEUE_WATCHED``), and
# snapshots carry them (docs/queues.md "Snapshots").
_KUEUE = "kueue.x-k8s.io"
QUEUE_RESOURCES: tuple[Resource, ...] = (
    Resource(_KUEUE, "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False),
    Resource(_KUEUE, "v1beta2", "cohorts", "Cohort", namespaced=False),
    Resource(_KUEUE, "v1beta2", "localqueues", "LocalQueue"),
    Resource(_KUEUE, "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False, has_status=False),
    Resource(_KUEUE, "v1beta2", "workloads", "Workload"),
    Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False),
    Resource("scheduling.run.ai", "v2", "queues", "Queue", namespaced=False),
)
# What the adapter lists once and watches beside the snapshot kinds, each only when discovery finds it served:
# the queues, and the Volcano and KAI PodGroups their gangs wait in. YuniKorn's queues live in a ConfigMap,
# read from snapshots only (docs/queues.md "On a live cluster").
QUEUE_WATCHED: tuple[Resource, ...] = (*QUEUE_RESOURCES, VOLCANO_PODGROUPS, KAI_PODGROUPS)
CONFIG_MAPS = Resource(
    "", "v1", "configmaps", "ConfigMap", has_status=False
)  # YuniKorn's queue configuration

RESOURCES: tuple[Resource, ...] = (
    NODES,
    PODS,
    EVENTS,
    EVENTS_V1,
    PODGROUPS,
    WORKLOADS,
    COMPOSITE_PODGROUPS,
    PDBS,
    PRIORITY_CLASSES,
    RESOURCE_CLAIMS,
    *RBAC_RESOURCES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_SLICES,
    DEVICE_CLASSES,
    *OWNER_RESOURCES,  # after PODGROUPS: a bare kind "PodGroup" means scheduling.k8s.io's
    *QUEUE_RESOURCES,  # after WORKLOADS: a bare kind "Workload" means scheduling.k8s.io's
    CONFIG_MAPS,
)

# What a snapshot holds (docs/design.md "Contract: cluster snapshot files"), in listing order.
SNAPSHOT_RESOURCES: tuple[Resource, ...] = (
    NODES,
    PRIORITY_CLASSES,
    PODGROUPS,
    COMPOSITE_PODGROUPS,
    WORKLOADS,
    PDBS,
    DEVICE_CLASSES,
    RESOURCE_SLICES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    PODS,
)

_BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES}
_BY_KIND_ONLY: dict[str, Resource] = {}
_BY_GROUP_KIND: dict[tuple[str, str], Resource] = {}
for _r in RESOURCES:
    _BY_KIND_ONLY.setdefault(_r.kind, _r)
    _BY_GROUP_KIND.setdefault((_r.group, _r.kind), _r)


def resource_for_object(obj: dict) -> Resource | None:
    """The resource an object belongs to, by apiVersion+kind; kind alone only when it has no apiVersion
    (a Volcano ``PodGroup`` of a version not described here is no resource of gangweb's, never the
    Kubernetes PodGroup)."""
    kind = obj.get("kind", "")
    api_version = obj.get("apiVersion")
    if api_version:
        group = str(api_version).rpartition("/")[0]
        return _BY_KIND.get((api_version, kind)) or _BY_GROUP_KIND.get((group, kind))
    return _BY_KIND_ONLY.get(kind)


def resource_named(api_version: str, kind: str) -> Resource:
    """The resource of ``apiVersion`` + ``kind``; for kinds not described here, the plural a CRD gets by
    default (the lower-case kind plus "s"), which is what every owner kind gangweb reads uses."""
    known = _BY_KIND.get((api_version, kind))
    if known is not None:
        return known
    group, _, version = api_version.rpartition("/")
    return Resource(group, version, kind.lower() + "s", kind)


def find_resource(group: str, version: str, plural: str) -> Resource | None:
    for r in RESOURCES:
        if (r.group, r.version, r.plural) == (group, version, plural):
            return r
    return None
