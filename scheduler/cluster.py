"""The seam between gangweb and a cluster.

Everything above this protocol (Celery tasks, execution, dashboard, API) works the same whether the
objects come from a real API server (``scheduler.kube``), the local Kubernetes API test server, or the
simulated cluster of the demo (``scheduler.simulation``). Objects are plain dicts in their real
Kubernetes API shapes, so the engine cannot tell the sources apart.

No Django import here: the engine side and the adapters must stay importable alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from scheduler.engine.gangkey import split_gang_key
from scheduler.kinds import is_native

if TYPE_CHECKING:
    from scheduler.engine.caching.live import LiveSnapshot

KubeObject = dict[str, Any]
# What a watch cache's index files an object under (client-go's IndexFunc): none, one or several values.
IndexFunc = Callable[[KubeObject], tuple[str, ...]]

# The condition gangweb's execution sets on the PodGroup it evicts for (``scheduler/preemption/execution/``;
# a domain-prefixed type: kube-scheduler owns PodGroupInitiallyScheduled, we only add ours), and its reasons
# while the victims are evicted and once they are. The simulation reads it like kube-scheduler would.
PREEMPTION_CONDITION = "gangweb.io/Preemption"
# Preempt with notice (docs/design.md): the deadline gangweb writes on a victim unit it gives notice to (the
# workload answers with its checkpoint, scheduler/engine/checkpoints.py).
NOTICE_DEADLINE_ANNOTATION = "gangweb.io/preemption-deadline"
EVICTING, VICTIMS_EVICTED = "Evicting", "VictimsEvicted"


@dataclass(frozen=True)
class EvictionResult:
    """What the Eviction API answered for one pod.

    ``code`` is the HTTP status (201 created, 200 ok, 404 gone, 429 blocked by a PDB, 409 conflict,
    5xx server trouble); ``ok`` means the pod is evicted (or, for a dry run, would be).
    """

    namespace: str
    name: str
    code: int
    message: str = ""
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        # A pod already gone counts as evicted: the goal (it no longer holds capacity) is met.
        return self.code in (200, 201, 404)

    @property
    def retryable(self) -> bool:
        return self.code == 429 or self.code >= 500

    @property
    def budget_refused(self) -> bool:
        """A 429 because a PodDisruptionBudget allows no disruption now (not API priority and fairness)."""
        return self.code == 429 and "disruption budget" in self.message.lower()


class ClusterError(RuntimeError):
    """A cluster read or write failed (not "object gone", which the methods treat as done/None).

    ``code`` is the HTTP status the API answered, 0 when there was no answer (timeout, refused).
    """

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.code = code

    @property
    def retryable(self) -> bool:
        return self.code in (0, 409, 429) or self.code >= 500


# The ``reportingController`` of the Kubernetes Events gangweb writes (observe mode tells them from
# kube-scheduler's by it).
GANGWEB_CONTROLLER = "gangweb.io/preemption"


@dataclass(frozen=True)
class ClusterEvent:
    """A Kubernetes Event gangweb writes (reason ``Preempted`` on victims, etc.)."""

    namespace: str
    involved_kind: str
    involved_name: str
    reason: str
    message: str
    type: str = "Normal"
    related_kind: str | None = None
    related_name: str | None = None
    related_namespace: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Cluster(Protocol):
    """What gangweb needs from a cluster: read a consistent snapshot, write a few things."""

    name: str

    def snapshot_objects(self) -> list[KubeObject]:
        """All Nodes, Pods, PodGroups, CompositePodGroups, Workloads, PDBs and PriorityClasses,
        as raw dicts with ``apiVersion``/``kind`` set, suitable for ``scheduler.engine.parse_snapshot``."""
        ...

    def get_pod(self, namespace: str, name: str) -> KubeObject | None: ...

    def evict(
        self, namespace: str, name: str, *, uid: str | None = None, dry_run: bool = False
    ) -> EvictionResult:
        """POST the pod's ``eviction`` subresource (policy/v1); never raises for API answers.

        ``uid`` goes into ``deleteOptions.preconditions.uid``: when the pod of that name is another one
        now (a controller recreated it), the answer is 409 and nothing is evicted."""
        ...

    def delete_pod(self, namespace: str, name: str, *, uid: str, dry_run: bool = False) -> EvictionResult:
        """DELETE the pod, as kube-scheduler removes its victims (no disruption budget is consulted), with
        the UID precondition: 200 deleted (or terminating), 404 gone, 409 another pod has the name now."""
        ...

    def mark_disruption_target(
        self, namespace: str, name: str, message: str, *, uid: str | None = None
    ) -> None:
        """Set the ``DisruptionTarget=True`` pod condition (reason ``PreemptionByScheduler``); with ``uid``,
        only on that very pod (another pod under the name now refuses the write: ``ClusterError``)."""
        ...

    def record_event(self, event: ClusterEvent) -> str | None:
        """Write ``event``; its name where the cluster keeps one (``CountsEvents``)."""
        ...

    def set_podgroup_condition(
        self, namespace: str, name: str, type_: str, status: str, reason: str, message: str
    ) -> None: ...

    def annotate(
        self, api_version: str, kind: str, namespace: str, name: str, annotations: dict[str, str | None]
    ) -> bool:
        """Merge ``annotations`` into the object's (a None value removes that key): False when the object is
        gone. Raises ClusterError when the cluster cannot answer."""
        ...

    def get_object(self, api_version: str, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        """One object of any kind the cluster serves (e.g. a gang's Job, JobSet or RayCluster), or None when
        it does not exist. Raises ClusterError when the cluster cannot answer."""
        ...

    def create_object(self, obj: KubeObject) -> bool:
        """Create ``obj`` (e.g. a PodGroup): True when created, False when an object of that kind, namespace
        and name already exists (so ensuring an object is idempotent). Raises ClusterError otherwise."""
        ...


# Abilities some clusters have beyond ``Cluster``: callers ask with isinstance (each is runtime_checkable),
# and a cluster without one gets the behaviour its docstring names.


@runtime_checkable
class FreshSnapshots(Protocol):
    """A cluster whose ``snapshot_objects`` may be a cached view and that can read the API server now (the
    kube adapter's relist). Planning and the execution's re-check read through it; others are fresh anyway."""

    def fresh_snapshot(self) -> list[KubeObject]: ...


@runtime_checkable
class WatchCache(Protocol):
    """A cluster that keeps one watch cache per kind in this process (the kube adapter once started): listed
    once, then watched. Detection, the ensurer and the dashboard read ``cached_objects``; planning reads
    ``live_snapshot`` (``scheduler.engine.caching.live.LiveSnapshot``, kept from the same events); the re-check
    reads only what it must afresh and waits until the cache holds those reads (``wait_for_versions``)."""

    def cached_objects(self, kinds: Collection[str] | None = None) -> list[KubeObject]:
        """Every cached object, or those of ``kinds`` (kind names, any API group), once the cache is synced
        (no copy: callers must not modify them)."""
        ...

    def cached_get(self, kind: str, key: str) -> KubeObject | None:
        """The cached object of ``kind`` at ``key`` (``NAMESPACE/NAME``, or ``NAME`` for a cluster-wide
        kind), or None."""
        ...

    def cached_indexed(self, kind: str, func: IndexFunc, value: str) -> list[KubeObject]:
        """The cached objects of ``kind`` that ``func`` files under ``value``: an index the cache keeps per
        event from its first use, so a reader of one gang's pods never walks every pod."""
        ...

    def live_snapshot(self) -> LiveSnapshot: ...

    def resource_versions(self) -> dict[str, str]:
        """The resourceVersion (per plural) up to which every event is in the cache and the live snapshot."""
        ...

    def wait_for_versions(self, versions: dict[str, str], timeout: float = 10.0) -> bool: ...

    def read_fresh(self, kind: str, namespace: str | None = None) -> tuple[list[KubeObject], str]:
        """One kind's objects read from the API server now, and the list's resourceVersion."""
        ...


def version_reached(have: str, want: str) -> bool:
    """Whether a cache at resourceVersion ``have`` holds everything up to ``want``. resourceVersions are
    etcd revisions (integers, one sequence for every kind) on every API server gangweb knows; anything
    else compares by equality."""
    if not want:
        return True
    if have.isdigit() and want.isdigit():
        return int(have) >= int(want)
    return have == want


def current_objects(cluster: Cluster) -> list[KubeObject]:
    """The cluster's objects for a reader that only looks (detection, the ensurer, the dashboard): the
    watch cache where there is one (no list, no copy), else ``snapshot_objects``."""
    if isinstance(cluster, WatchCache):
        return cluster.cached_objects()
    return cluster.snapshot_objects()


@runtime_checkable
class ListsEvents(Protocol):
    """A cluster whose Events are not part of its snapshot and are listed apart (the kube adapter). Observe
    mode reads kube-scheduler's ``Preempted`` events through it; elsewhere they come in the snapshot, if at all."""

    def list_events(self, *, reason: str | None = None, namespace: str | None = None) -> list[KubeObject]: ...


@runtime_checkable
class CountsEvents(Protocol):
    """A cluster whose Events can count their repeats (the kube adapter): ``record_event`` answers the
    Event's name and ``update_event_series`` sets its ``series.count``. Elsewhere each Event is kept once."""

    def update_event_series(self, namespace: str, name: str, count: int) -> None: ...


@runtime_checkable
class BoundedCalls(Protocol):
    """A cluster whose calls take up to ``request_timeout`` seconds (connect + read): a node lock must
    outlast that. Clusters without it answer at once (in memory)."""

    @property
    def request_timeout(self) -> float: ...


@runtime_checkable
class WatchEvents(Protocol):
    """A cluster that hands each watch event to listeners once its watches run (the kube adapter once
    started). The watch trigger listens to PodGroup events through it; other clusters have no events."""

    @property
    def watching(self) -> bool: ...

    def add_listener(self, listener: Callable[[str, Any, KubeObject | None], None]) -> None: ...


@runtime_checkable
class Closable(Protocol):
    """A cluster holding threads and connections of its own (the kube adapter's watch cache)."""

    def close(self) -> None: ...


@runtime_checkable
class Steps(Protocol):
    """A cluster that moves only when told (the simulation): each ``tick`` returns what changed."""

    def tick(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class SubmitsGangs(Protocol):
    """A cluster that submits gangs itself (the simulation): their pods as a controller creates them, so
    the demo's webhook reviews them as a real cluster's would (``gangweb/dashboard/admitting.py``)."""

    def pods_of(self, gang_key: str) -> tuple[int, list[KubeObject]]:
        """The gang's minCount and pod objects; (0, []) for a gang it does not know."""
        ...


@runtime_checkable
class HoldsDevices(Protocol):
    """A cluster that knows which GPU index of a node each pod holds (the simulation). It says only what
    holds what; the dashboard draws its own picture (``gangweb/clusterview/picture.py``) from the snapshot
    and, for the other clusters, hands a node's GPUs to its pods in start order."""

    def device_holders(self) -> dict[str, list[str | None]]:
        """Node name -> one entry per GPU index: the ``namespace/name`` of the pod holding it, or None."""
        ...


@runtime_checkable
class ReportsActivity(Protocol):
    """A cluster that says how busy its GPUs are, in dcgm-exporter's shape (the simulation): what a
    Prometheus scraping dcgm-exporter would hold, for a demo without one (``scheduler/activity.py``)."""

    def dcgm_series(self) -> list[tuple[str, dict[str, str], float]]:
        """(metric name, dcgm-exporter's labels, value) per GPU in use, as dcgm-exporter exposes them."""
        ...


def object_key(obj: KubeObject) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def split_key(key: str) -> tuple[str, str]:
    """Inverse of ``object_key`` for namespaced objects, by the gang key's one rule; raises ValueError with a
    readable message."""
    return split_gang_key(key)


def of_kind(objects: Iterable[KubeObject], kind: str) -> list[KubeObject]:
    return [o for o in objects if is_native(o, kind)]
