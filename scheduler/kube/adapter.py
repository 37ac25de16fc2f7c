"""``KubeCluster``: the ``Cluster`` protocol over a real (or test) Kubernetes API server.

    cluster = KubeCluster.from_kubeconfig("kubeconfig").start()   # list + watch, waits for sync
    objs = cluster.snapshot_objects()                              # informer cache, raw API dicts
    fresh = cluster.fresh_snapshot()                               # lists everything now
    cluster.evict("ns", "pod", dry_run=True)                       # EvictionResult, never raises
    cluster.stop()

Without ``start()`` the cluster still works: ``snapshot_objects()`` then lists on every call.

Beside the snapshot kinds it reads the queue managers' kinds the server serves (``QUEUE_WATCHED``: Kueue,
Volcano, KAI), found by discovery once per start and then listed and watched like the others, so the queue
read model and its ownership signals see them; a cluster without them pays one discovery request per API
group version.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ..cluster import (
    GANGWEB_CONTROLLER,
    ClusterError,
    ClusterEvent,
    EvictionResult,
    IndexFunc,
    KubeObject,
    version_reached,
)
from ..engine.caching.live import LiveSnapshot
from ..served import Served
from . import writes
from .apis import list_raw, read_json, stamp
from .discovery import discover
from .discovery import served as served_kinds
from .informer import Listener, Reflector, ReflectorsByReason, object_key
from .resources import (
    COMPOSITE_PODGROUPS,
    EVENTS_V1,
    PODGROUPS,
    PODS,
    QUEUE_WATCHED,
    SNAPSHOT_RESOURCES,
    WORKLOADS,
    Resource,
)

log = logging.getLogger(__name__)

# In a process that indexes in the background, a task's or watch's thread takes the interpreter lock back
# after each socket or database wait behind the indexer: up to a switch interval each time. At 1 ms instead
# of 5, 200 round trips beside a 20,000-node index build took 0.22-0.46 s instead of 0.57-0.90
# (docs/measurements.md); gangweb.asgi does the same for its ticker.
INDEXING_SWITCH_INTERVAL = 0.001

DEFAULT_TIMEOUT = (5.0, 15.0)  # (connect, read) seconds, for every non-watch call


class KubeCluster:
    def __init__(
        self,
        configuration: client.Configuration | client.ApiClient,
        *,
        name: str = "kubernetes",
        namespace: str | None = None,
        resources: Iterable[Resource] = SNAPSHOT_RESOURCES,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        watch_timeout: int = 300,
        controller: str = GANGWEB_CONTROLLER,
        instance: str | None = None,
        max_parallel_writes: int = 32,
        queue_kinds: Iterable[Resource] | None = None,
    ):
        """``namespace`` limits namespaced kinds to one namespace (nodes and priority classes stay global).
        ``queue_kinds``: the custom kinds read when served (default: ``QUEUE_WATCHED`` for a reader of the
        snapshot kinds, none for a reader of a few kinds such as the webhook's PodGroup watch)."""
        if isinstance(configuration, client.ApiClient):
            configuration = configuration.configuration
        self.name = name
        self.namespace = namespace
        self.resources = tuple(resources)
        if queue_kinds is None:
            queue_kinds = QUEUE_WATCHED if self.resources == SNAPSHOT_RESOURCES else ()
        self.queue_kinds = tuple(queue_kinds)
        self._watch_timeout = watch_timeout
        self.timeout = timeout
        self.controller = controller
        self.instance = instance or f"gangweb-{socket.gethostname()}"
        self._configuration = configuration
        self._max_parallel_writes = max_parallel_writes
        self._pid = os.getpid()
        self.api_client = self._new_client(max_parallel_writes)
        # Watches hold their connections for minutes: they get a pool of their own, so parallel
        # evictions never wait for (or evict from the pool) a watch connection.
        self._watch_client = self._new_client(self._watch_pool_size())
        self._listeners: list[Listener] = []
        self._reflectors = {r: self._reflector(r) for r in self.resources}
        # The queue kinds the server serves: discovered once (None until then), each with its reflector.
        self._served_queue_kinds: tuple[Resource, ...] | None = None
        self._queue_reflectors: dict[Resource, Reflector] = {}
        self._queue_lock = threading.Lock()
        self._queues_found = threading.Event()
        self._queue_thread: threading.Thread | None = None
        self._index_starter: threading.Thread | None = None
        self._stopping = threading.Event()
        self._started = False
        self._served: Served | None = None
        self._changed = threading.Condition()
        # Events by reason (observe mode's Preempted ones), listed once and then watched, from the first read.
        self._events = ReflectorsByReason(EVENTS_V1, namespace, watch_timeout, timeout)
        # The engine's parsed view of the same cache, kept from the same events (docs/kube.md, "Watch cache").
        self.live = LiveSnapshot()
        self._listeners.append(lambda type_, _resource, obj: self.live.apply(type_, obj))

    def _watch_pool_size(self) -> int:
        return len(self.resources) + len(self.queue_kinds) + 2

    def _reflector(self, resource: Resource) -> Reflector:
        return Reflector(
            self._watch_client,
            resource,
            namespace=self.namespace,
            watch_timeout=self._watch_timeout,
            request_timeout=self.timeout,
            listener=self._notify,
        )

    def _new_client(self, pool_size: int) -> client.ApiClient:
        configuration = copy.deepcopy(self._configuration)
        configuration.connection_pool_maxsize = pool_size
        return client.ApiClient(configuration)

    def _api(self) -> client.ApiClient:
        """The write/read client, rebuilt in a forked child (Celery prefork): pooled sockets must not be
        shared with the parent process."""
        if os.getpid() != self._pid:
            self._pid = os.getpid()
            self.api_client = self._new_client(self._max_parallel_writes)
            self._watch_client = self._new_client(self._watch_pool_size())
            for reflector in self._all_reflectors():
                reflector.use_client(self._watch_client)
            self._events.use_client(self._watch_client)
        return self.api_client

    def rest_client(self) -> client.ApiClient:
        """The pooled client of this process, for callers with API calls of their own (the access
        reviews of ``gangweb/access/kube.py``)."""
        return self._api()

    # ----- construction
    @classmethod
    def from_kubeconfig(
        cls, path: str | Path | None = None, *, context: str | None = None, **kwargs: object
    ) -> KubeCluster:
        configuration = client.Configuration()
        try:
            config.load_kube_config(
                config_file=str(path) if path else None,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except (config.ConfigException, OSError, ValueError, TypeError) as exc:
            raise ClusterError(f"cannot load kubeconfig {path or '$KUBECONFIG'}: {exc}") from exc
        return cls(configuration, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def in_cluster(cls, **kwargs: object) -> KubeCluster:
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException as exc:
            raise ClusterError(f"not running in a cluster: {exc}") from exc
        return cls(configuration, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_environment(cls, **kwargs: object) -> KubeCluster:
        """In-cluster service account when present, else ``$KUBECONFIG`` / ``~/.kube/config``."""
        if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
            return cls.in_cluster(**kwargs)
        return cls.from_kubeconfig(os.environ.get("KUBECONFIG"), **kwargs)

    # ----- informers
    def start(self, *, wait: bool = True, timeout: float = 30.0, index: bool = False) -> KubeCluster:
        """Start the informers; with ``wait``, return once every kind is listed (ClusterError after
        ``timeout``, informers stopped again). ``index``: once every kind is listed, the live snapshot
        indexes itself in the background after each quiet moment (``LiveSnapshot.keep_indexed``), for
        processes that plan, and the process's heap is settled after each index
        (``scheduler.engine.caching.heap``: the cache frozen out of the garbage collector's full passes,
        which would walk it all, GIL held), and the interpreter switches threads every millisecond
        (``INDEXING_SWITCH_INTERVAL``)."""
        self._api()
        try:
            served = self.served(refresh=True)
        except ClusterError as exc:  # the informers retry until the API server answers; so will discovery
            log.warning("cannot read the API server's discovery (%s); watching every kind", exc)
        else:
            for limit in served.limits():
                log.warning("%s", limit, extra={"served": served.as_dict()})
        readable = self.readable()
        for resource, reflector in self._reflectors.items():
            if resource in readable:
                reflector.start()
            else:  # not served: an empty cache, never a watch that 404s forever
                reflector.synced.set()
        self._stopping.clear()
        if index and self._index_starter is None:
            sys.setswitchinterval(INDEXING_SWITCH_INTERVAL)
            self._index_starter = threading.Thread(
                target=self._index_once_listed, name="index-start", daemon=True
            )
            self._index_starter.start()
        if self.queue_kinds and self._queue_thread is None:
            self._queue_thread = threading.Thread(
                target=self._watch_queue_kinds, name="queue-kinds", daemon=True
            )
            self._queue_thread.start()
        self._started = True
        if wait and not self.wait_synced(timeout):
            pending = self._pending()
            errors = {r.resource.plural: r.last_error for r in self._all_reflectors() if r.last_error}
            self.stop()
            raise ClusterError(f"informers not synced after {timeout}s: {pending} {errors}")
        return self

    def _index_once_listed(self) -> None:
        """Index in the background (and settle the heap) from when every kind is listed. The first settle
        takes the heap's measure; taken on a half-listed cache it was a fraction of the whole, so the full
        collection that followed a minute later held the interpreter lock for seconds in the middle of work
        (20,000 nodes: the first preemption's watch event 4-6 s late, docs/kube.md)."""
        while not self._stopping.is_set():
            if self.wait_synced(1.0):
                if not self._stopping.is_set():
                    self.live.keep_indexed(settle_heap=True)
                return

    def _all_reflectors(self) -> list[Reflector]:
        with self._queue_lock:
            return [*self._reflectors.values(), *self._queue_reflectors.values()]

    def _pending(self) -> list[str]:
        pending = [
            f"{r.resource.plural}.{r.resource.group}".rstrip(".")
            for r in self._all_reflectors()
            if not r.synced.is_set()
        ]
        if self.queue_kinds and not self._queues_found.is_set():
            pending.append("discovery of the queue kinds")
        return pending

    def served_queue_kinds(self) -> tuple[Resource, ...]:
        """The queue kinds this server serves (discovered at the first call; ClusterError when the server
        cannot be asked)."""
        with self._queue_lock:
            if self._served_queue_kinds is not None:
                return self._served_queue_kinds
        try:
            found = served_kinds(self._api(), self.queue_kinds, self.timeout) if self.queue_kinds else ()
        except (ApiException, *writes.TRANSPORT_ERRORS) as exc:
            writes.raise_cluster_error("discovering the queue kinds", exc)
            raise  # unreachable: raise_cluster_error raises
        with self._queue_lock:
            self._served_queue_kinds = found
        return found

    def _watch_queue_kinds(self) -> None:
        """Discover the served queue kinds (retried with backoff until the server answers), then list and
        watch each like a snapshot kind."""
        delay = 0.2
        while not self._stopping.is_set():
            try:
                kinds = self.served_queue_kinds()
            except ClusterError as exc:
                log.warning("queue kinds: %s; retrying in %.1fs", exc, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, 10.0)
                continue
            with self._queue_lock:
                if self._stopping.is_set():
                    return
                for resource in kinds:
                    if resource not in self._queue_reflectors:
                        self._queue_reflectors[resource] = self._reflector(resource)
                    self._queue_reflectors[resource].start()
            self._queues_found.set()
            return

    def stop(self) -> None:
        self._stopping.set()
        starter, self._index_starter = self._index_starter, None
        if starter is not None and starter is not threading.current_thread():
            starter.join(5.0)
        self.live.stop_indexing()
        self._events.stop()
        thread, self._queue_thread = self._queue_thread, None
        if thread is not None:
            thread.join(5.0)
        for reflector in self._all_reflectors():
            reflector.stop()
        self._started = False

    def close(self) -> None:
        self.stop()
        self.api_client.close()
        self._watch_client.close()

    def __enter__(self) -> KubeCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- discovery (scheduler.served.Discovers)
    def served(self, *, refresh: bool = False) -> Served:
        """What the API server serves of the workload APIs, read once (``refresh``: again)."""
        if self._served is None or refresh:
            try:
                self._served = discover(self._api(), self.timeout)
            except (ApiException, *writes.TRANSPORT_ERRORS) as exc:
                writes.raise_cluster_error("reading discovery", exc)
        assert self._served is not None
        return self._served

    def readable(self) -> tuple[Resource, ...]:
        """This cluster's kinds less the workload kinds discovery found not served (all when unknown)."""
        served = self._served
        if served is None:
            return self.resources
        missing = {
            PODGROUPS: not served.podgroups,
            WORKLOADS: not served.workloads,
            COMPOSITE_PODGROUPS: not served.composite_podgroups,
        }
        return tuple(r for r in self.resources if not missing.get(r, False))

    def wait_synced(self, timeout: float = 30.0) -> bool:
        """Whether every kind is listed within ``timeout``: the snapshot kinds, and the queue kinds once
        discovered (a plan before then could take a queue manager's pods for free ones)."""
        deadline = time.monotonic() + timeout
        if not all(r.synced.wait(max(0.0, deadline - time.monotonic())) for r in self._reflectors.values()):
            return False
        if self.queue_kinds and not self._queues_found.wait(max(0.0, deadline - time.monotonic())):
            return False
        with self._queue_lock:
            queue_reflectors = list(self._queue_reflectors.values())
        return all(r.synced.wait(max(0.0, deadline - time.monotonic())) for r in queue_reflectors)

    def reflector(self, resource: Resource) -> Reflector:
        return self._reflectors[resource]

    def resource_versions(self) -> dict[str, str]:
        return {r.plural: ref.resource_version for r, ref in self._reflectors.items()}

    def add_listener(self, listener: Listener) -> None:
        """``listener(type, resource, obj)`` after each watch event (and ``("RELIST", resource, None)``);
        it runs on the informer thread: keep it short."""
        self._listeners.append(listener)

    def _notify(self, type_: str, resource: Resource, obj: dict | None) -> None:
        for listener in self._listeners:
            try:
                listener(type_, resource, obj)
            except Exception:  # a listener's bug must not stall the informer
                log.exception("listener %r failed on %s %s", listener, type_, resource.plural)
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[list[KubeObject]], bool], timeout: float = 10.0) -> bool:
        """Wait until ``predicate(snapshot)`` holds for the informer cache."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self._cached()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.2))
        return True

    # ----- Cluster protocol: reading
    def _cached(self) -> list[KubeObject]:
        return [o for reflector in self._all_reflectors() for o in reflector.objects()]

    def _await_sync(self) -> None:
        if not self.wait_synced(self.sync_timeout):
            raise ClusterError(f"watch cache not synced after {self.sync_timeout:g}s: {self._pending()}")

    def snapshot_objects(self) -> list[KubeObject]:
        """The informer cache, copied (once synced: a partial snapshot would make the engine plan on a
        cluster that looks emptier than it is); listed afresh while the informers are not started."""
        if not self._started:
            return self.fresh_snapshot()
        self._await_sync()
        # callers own their copy; a JSON round trip copies plain API dicts several times faster than deepcopy
        return json.loads(json.dumps(self._cached()))

    # ----- WatchCache (scheduler.cluster): the cache itself, without copies
    sync_timeout = 120.0

    def cached_objects(self, kinds: Collection[str] | None = None) -> list[KubeObject]:
        """Every cached object (of ``kinds``, by kind name, in any API group), not copied (read-only for
        callers); listed afresh when not started."""
        if not self._started:
            objects = self.fresh_snapshot()
            return objects if kinds is None else [o for o in objects if o.get("kind") in kinds]
        self._await_sync()
        if kinds is None:
            return self._cached()
        return [o for r in self._all_reflectors() if r.resource.kind in kinds for o in r.objects()]

    def cached_get(self, kind: str, key: str) -> KubeObject | None:
        """The cached object of ``kind`` at ``key``; looked up in a fresh list when not started."""
        if not self._started:
            return next((o for o in self.cached_objects((kind,)) if object_key(o) == key), None)
        self._await_sync()
        for reflector in self._all_reflectors():
            if reflector.resource.kind == kind and (found := reflector.get(key)) is not None:
                return found
        return None

    def add_index(self, kind: str, func: IndexFunc) -> None:
        """Index the cached objects of ``kind`` by ``func`` (``cached_indexed``) from the start, so that its
        first reader does not make it (a second at 20,000 nodes): the start-up list files every object."""
        for reflector in self._all_reflectors():
            if reflector.resource.kind == kind:
                reflector.add_index(func)

    def cached_indexed(self, kind: str, func: IndexFunc, value: str) -> list[KubeObject]:
        """The cached objects of ``kind`` that ``func`` files under ``value`` (an index kept per event,
        made on first use); a scan of a fresh list when not started."""
        if not self._started:
            return [o for o in self.cached_objects((kind,)) if value in func(o)]
        self._await_sync()
        return [o for r in self._all_reflectors() if r.resource.kind == kind for o in r.indexed(func, value)]

    def live_snapshot(self) -> LiveSnapshot:
        """The engine's view kept from the watch events; when not started, one built from a fresh list."""
        if not self._started:
            return LiveSnapshot(self.fresh_snapshot())
        self._await_sync()
        return self.live

    def wait_for_versions(self, versions: dict[str, str], timeout: float = 10.0) -> bool:
        """Wait until the cache of each named plural has reached its resourceVersion (True at once when not
        started: every read lists afresh then)."""
        if not self._started:
            return True
        by_plural = {r.plural: ref for r, ref in self._reflectors.items()}
        deadline = time.monotonic() + timeout
        with self._changed:
            while not all(
                version_reached(by_plural[p].resource_version, v)
                for p, v in versions.items()
                if p in by_plural
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(min(remaining, 0.05))
        return True

    @property
    def watching(self) -> bool:
        return self._started

    def fresh_snapshot(self) -> list[KubeObject]:
        """Every snapshot object as the API server has it now (one list per kind, the served queue kinds
        included)."""
        objects: list[KubeObject] = []
        if self._served is None:
            try:
                self.served()
            except ClusterError:
                pass  # each kind's list below says what is wrong
        for resource in (*self.readable(), *self.served_queue_kinds()):
            try:
                items, _ = list_raw(self._api(), resource, namespace=self.namespace, timeout=self.timeout)
            except (ApiException, *writes.TRANSPORT_ERRORS) as exc:
                writes.raise_cluster_error(f"listing {resource.plural}", exc)
            objects.extend(items)
        return objects

    def read_fresh(self, kind: str, namespace: str | None = None) -> tuple[list[KubeObject], str]:
        """One kind's objects as the API server has them now (a consistent list, one namespace or all) and
        the list's resourceVersion: what the execution's re-check reads besides single objects."""
        resource = next((r for r in self.resources if r.kind == kind), None)
        if resource is None:
            raise ClusterError(f"{kind} is not one of the kinds this cluster reads")
        try:
            return list_raw(
                self._api(), resource, namespace=namespace or self.namespace, timeout=self.timeout
            )
        except (ApiException, *writes.TRANSPORT_ERRORS) as exc:
            writes.raise_cluster_error(f"listing {resource.plural}", exc)
            return [], ""

    def list_events(self, *, reason: str | None = None, namespace: str | None = None) -> list[KubeObject]:
        """``events.k8s.io/v1`` Events, optionally of one reason (observe mode reads kube-scheduler's
        ``Preempted`` events this way). Once started, from a watch cache of that reason (field selector),
        listed at the first call and then watched like the snapshot kinds, never relisted on a timer; the
        objects are the cache's own (read-only). Not started, or for another namespace: listed now."""
        if self._started and namespace in (None, self.namespace):
            self._api()  # a forked child's own pools first
            return self._events.objects(self._watch_client, reason, self.sync_timeout)
        api = client.EventsV1Api(self._api())
        selector = f"reason={reason}" if reason else None
        try:
            if namespace or self.namespace:
                response = api.list_namespaced_event(
                    namespace or self.namespace,
                    field_selector=selector,
                    _request_timeout=self.timeout,
                    _preload_content=False,
                )
            else:
                response = api.list_event_for_all_namespaces(
                    field_selector=selector, _request_timeout=self.timeout, _preload_content=False
                )
            return [stamp(EVENTS_V1, e) for e in read_json(response).get("items") or []]
        except (ApiException, *writes.TRANSPORT_ERRORS) as exc:
            writes.raise_cluster_error("listing events", exc)
            return []

    def get_pod(self, namespace: str, name: str) -> KubeObject | None:
        try:
            response = client.CoreV1Api(self._api()).read_namespaced_pod(
                name, namespace, _request_timeout=self.timeout, _preload_content=False
            )
            return stamp(PODS, read_json(response))
        except ApiException as exc:
            if exc.status == 404:
                return None
            writes.raise_cluster_error(f"reading pod {namespace}/{name}", exc)
        except writes.TRANSPORT_ERRORS as exc:
            writes.raise_cluster_error(f"reading pod {namespace}/{name}", exc)
        return None

    def get_object(self, api_version: str, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        return writes.read_object(self._api(), api_version, kind, namespace, name, timeout=self.timeout)

    # ----- Cluster protocol: writing
    def create_object(self, obj: KubeObject) -> bool:
        return writes.create_object(self._api(), obj, timeout=self.timeout)

    def evict(
        self, namespace: str, name: str, *, uid: str | None = None, dry_run: bool = False
    ) -> EvictionResult:
        return writes.evict(self._api(), namespace, name, uid=uid, dry_run=dry_run, timeout=self.timeout)

    def delete_pod(self, namespace: str, name: str, *, uid: str, dry_run: bool = False) -> EvictionResult:
        return writes.delete_pod(self._api(), namespace, name, uid=uid, dry_run=dry_run, timeout=self.timeout)

    @property
    def request_timeout(self) -> float:
        """The longest one non-watch call can take (connect + read): how long a lock must outlast a call."""
        return float(sum(self.timeout))

    def annotate(
        self, api_version: str, kind: str, namespace: str, name: str, annotations: dict[str, str | None]
    ) -> bool:
        return writes.annotate(
            self._api(), api_version, kind, namespace, name, annotations, timeout=self.timeout
        )

    def mark_disruption_target(
        self, namespace: str, name: str, message: str, *, uid: str | None = None
    ) -> None:
        writes.mark_disruption_target(self._api(), namespace, name, message, timeout=self.timeout, uid=uid)

    def record_event(self, event: ClusterEvent) -> str:
        """Create the Event; its name (``update_event_series`` counts its repeats under it)."""
        involved = self._cached_uid(event.involved_kind, event.namespace, event.involved_name)
        related = None
        if event.related_kind and event.related_name:
            related = self._cached_uid(
                event.related_kind, event.related_namespace or event.namespace, event.related_name
            )
        created = writes.record_event(
            self._api(),
            event,
            controller=self.controller,
            instance=self.instance,
            timeout=self.timeout,
            involved_uid=involved,
            related_uid=related,
        )
        return created["metadata"]["name"]

    def update_event_series(self, namespace: str, name: str, count: int) -> None:
        writes.update_event_series(self._api(), namespace, name, count, timeout=self.timeout)

    def set_podgroup_condition(
        self, namespace: str, name: str, type_: str, status: str, reason: str, message: str
    ) -> None:
        writes.set_podgroup_condition(
            self._api(),
            namespace,
            name,
            {"type": type_, "status": status, "reason": reason, "message": message},
            timeout=self.timeout,
        )

    def _cached_uid(self, kind: str, namespace: str, name: str) -> str | None:
        for resource, reflector in self._reflectors.items():
            if resource.kind == kind:
                obj = reflector.get(f"{namespace}/{name}" if resource.namespaced else name)
                return (obj or {}).get("metadata", {}).get("uid")
        return None
