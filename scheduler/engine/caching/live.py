"""A snapshot kept current from watch events: each event parses one object, never the whole cluster.

``LiveSnapshot`` holds the typed objects of ``snapshot.py`` (one ``Pod``, ``Node``, ``Group``... per
object, the parse that costs most of ``parse_snapshot``), updated in place by the events a watch cache
delivers (``apply("ADDED"|"MODIFIED"|"DELETED", obj)``; a relist's differences arrive as events too).
``snapshot()`` indexes the current typed objects into a ``Snapshot`` (capacity matrices, victim units),
memoised until the next change, so a plan made after any event stream equals the plan on a fresh
``parse_snapshot`` of the same objects (``tests/scheduler/engine/test_live.py``). When every change since
the last index was to pods without a node name or to PodGroups none of whose pods has one (a new gang's
PodGroup and pods: the change just before its plan), the last index is patched (``Snapshot.with_unbound``,
milliseconds) instead of indexed again in full. ``snapshot(overrides)``
indexes with a few raw objects replaced or removed (reservations, the re-check's fresh reads) without
touching the live state.

An event that leaves the engine's view as it was (a PodGroup's status conditions, a pod's resourceVersion:
the typed object compares equal) keeps the indexed snapshot: the Unschedulable condition that starts a
preemption does not make its plan re-index 20,000 nodes. ``local(nodes, podgroup, overrides)`` indexes only
the given nodes, the pods on them and the group's own pods (with every group, budget and priority class):
the re-check's question "does the gang fit on its planned nodes once the victims are gone" in milliseconds.

A malformed object is kept out and named: ``snapshot()`` raises its ``SnapshotError`` (the message a
fresh parse would give) until the object is fixed or deleted. Kinds the engine does not read are ignored,
so the kinds a watch cache holds are its own business (a new kind is a new parser in ``snapshot._PARSERS``).

``keep_indexed(quiet)`` indexes in the background once no event has come for ``quiet`` seconds after a
change, so the plan that follows a quiet moment finds the snapshot ready (a preemption's trigger, the
PodGroup's Unschedulable condition, is not a change: see above); ``settle_heap`` also keeps the cache and
each index out of the garbage collector's passes (``heap.py``). A caller asking while that index is being
built waits for it instead of building a second one. Under constant churn nothing is ever quiet and a plan
indexes when it asks, as without it.

Thread-safe: events come from one informer thread per kind, snapshots are taken from another.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler.kinds import native_kind

from ..errors import SnapshotError, object_label
from ..gangkey import GangKey, split_gang_key
from ..snapshot import _PARSERS, Snapshot, collector_paused
from .heap import HeapSettler

KubeObject = dict[str, Any]
MAX_LOG = 1_000  # changes remembered since the last index; beyond that the next index is a whole one


def raw_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{namespace}/{name}" if namespace else str(name)


def same(a: Any, b: Any) -> bool:
    """Whether two typed objects say the same to the engine (their slots compare equal; an attribute
    without ``__eq__`` compares by identity, so doubt counts as a change)."""
    if type(a) is not type(b):
        return False
    slots = getattr(type(a), "__slots__", None)
    if slots is None:
        equal: bool = a == b
        return equal
    try:
        return all(getattr(a, s, None) == getattr(b, s, None) for s in slots)
    except Exception:  # a comparison that raises: a change
        return False


def parse_one(obj: Mapping[str, Any]) -> tuple[str, Any]:
    """(key, typed object) of one raw object of a kind the engine reads; SnapshotError when malformed."""
    kind = obj.get("kind")
    try:
        item = _PARSERS[kind](obj)  # type: ignore[index]
    except ValueError as exc:
        raise SnapshotError(f"{object_label(str(kind), obj)}: {exc}") from None
    except (AttributeError, TypeError) as exc:
        raise SnapshotError(f"{object_label(str(kind), obj)}: malformed object ({exc})") from None
    return getattr(item, "key", None) or item.name, item


class LiveSnapshot:
    def __init__(self, objects: Iterable[KubeObject] = ()) -> None:
        self._parsed: dict[str, dict[str, Any]] = {kind: {} for kind in _PARSERS}
        self._keys: dict[tuple[str, str], str] = {}  # (kind, raw key) -> typed key
        self._errors: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._built: Snapshot | None = None
        # The last index made and its version, and each change since: (version, (kind, key) of the pod or
        # PodGroup when ``Snapshot.with_unbound`` takes it, else None). The next index patches that one when
        # it can.
        self._base: Snapshot | None = None
        self._base_version = -1
        self._log: list[tuple[int, tuple[str, str] | None]] = []
        self._building: int | None = None  # the version an index is being built for (without overrides)
        self._last_change = 0.0
        self._indexer: threading.Thread | None = None
        self._stop = False
        self._stopping = threading.Event()  # wakes the indexer's quiet wait when told to stop
        self._settler: HeapSettler | None = None  # keep_indexed(settle_heap=True)
        # Pod keys by node name and by "namespace/podgroup" (for ``local``).
        self._on_node: dict[str, set[str]] = {}
        self._in_group: dict[str, set[str]] = {}
        self.version = 0  # changes applied so far
        self.events = 0
        for obj in objects:
            self.apply("ADDED", obj)

    # ----- events
    def apply(self, event_type: str, obj: KubeObject | None) -> bool:
        """Apply one watch event; True when the engine's view changed."""
        if not obj:
            return False
        kind = native_kind(obj)
        if kind not in self._parsed:
            return False
        ident = (kind, raw_key(obj))
        with self._lock:
            self.events += 1
            item = None
            if event_type != "DELETED":
                try:
                    key, item = parse_one(obj)
                except SnapshotError as exc:
                    self._remove(ident)
                    self._errors[ident] = str(exc)
                    self._changed_now(None)
                    return True
                old_key = self._keys.get(ident)
                if old_key == key and ident not in self._errors and same(self._parsed[kind].get(key), item):
                    return False  # nothing the engine reads changed: the indexed snapshot still holds
            old_key = self._keys.get(ident)
            old = self._parsed[kind].get(old_key) if old_key is not None else None
            self._remove(ident)
            if item is not None:
                self._parsed[kind][key] = item
                self._keys[ident] = key
                if kind == "Pod":
                    self._index_pod(key, item, add=True)
            self._changed_now(ident if self._patchable(kind, ident[1], old, item) else None)
        return True

    def _patchable(self, kind: str, key: str, old: Any, item: Any) -> bool:
        """Whether ``Snapshot.with_unbound`` takes this change: a pod without a node name before and after,
        or a PodGroup none of whose pods has one. Called with the lock held, the pod indexes up to date."""
        if kind == "Pod":
            return all(p is None or p.node_name is None for p in (old, item))
        if kind == "PodGroup":
            pods = self._parsed["Pod"]
            return all(pods[p].node_name is None for p in self._in_group.get(key, ()))
        return False

    def _changed_now(self, unbound: tuple[str, str] | None) -> None:
        """One more change; ``unbound`` names it (kind, key) when ``Snapshot.with_unbound`` takes it, None
        for any other."""
        self.version += 1
        self._built = None
        self._last_change = time.monotonic()
        if len(self._log) >= MAX_LOG:
            self._log = []  # too many to patch: the next index is a whole one
            unbound = None
        self._log.append((self.version, unbound))
        if unbound is None:
            self._base = None  # no patch of it will do any more: its memory is the next index's
        self._changed.notify_all()

    def _index_pod(self, key: str, pod: Any, *, add: bool) -> None:
        for index, name in (
            (self._on_node, pod.node_name),
            (self._in_group, f"{pod.namespace}/{pod.group_name}" if pod.group_name else None),
        ):
            if not name:
                continue
            if add:
                index.setdefault(name, set()).add(key)
            else:
                keys = index.get(name)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[name]

    def _remove(self, ident: tuple[str, str]) -> None:
        self._errors.pop(ident, None)
        key = self._keys.pop(ident, None)
        if key is not None:
            item = self._parsed[ident[0]].pop(key, None)
            if ident[0] == "Pod" and item is not None:
                self._index_pod(key, item, add=False)

    # ----- reading
    def counts(self) -> dict[str, int]:
        with self._lock:
            return {kind: len(items) for kind, items in self._parsed.items()}

    def snapshot(self, overrides: Mapping[tuple[str, str], KubeObject | None] | None = None) -> Snapshot:
        """The indexed ``Snapshot`` of the current objects. ``overrides`` maps (kind, ``ns/name``) to a raw
        object that stands in for the live one (None: left out) in this snapshot only."""
        if overrides:
            with self._lock:
                self._raise_errors()
                parsed, keys = self._copy()
            return self._overridden(parsed, keys, overrides)
        with self._lock:
            self._raise_errors()
            # An index being made of this very version, or of an earlier one that a patch brings up to date
            # (a new gang's pods created while the index after a change elsewhere is made): wait for it
            # instead of indexing everything a second time beside it.
            while self._built is None and self._building is not None and self._patches_after(self._building):
                self._changed.wait()
            if self._built is not None:
                return self._built
            version, base, changed = self.version, self._base, self._unbound_changes()
        if base is not None and changed is not None:
            pods = {key: item for (kind, key), item in changed.items() if kind == "Pod"}
            groups = {key: item for (kind, key), item in changed.items() if kind == "PodGroup"}
            patched = self._made(lambda: base.with_unbound(pods, groups))
            if patched is not None:
                with self._lock:
                    self._keep(patched, version)
                return patched
            with self._lock:
                self._log.append((version, None))  # beyond a patch: index in full from this version on
                if self._base is base:
                    self._base = None
        return self._index_all()

    def _index_all(self) -> Snapshot:
        """Index every current object (``snapshot()`` when no patch of the last index will do)."""
        with self._lock:
            self._raise_errors()
            while self._built is None and self._building == self.version:
                self._changed.wait()
            if self._built is not None:
                return self._built
            version = self._building = self.version
            parsed, _ = self._copy()
        built = None
        try:
            built = self._made(lambda: Snapshot(parsed))
        finally:
            with self._lock:
                if self._building == version:
                    self._building = None
                if built is not None:
                    self._keep(built, version)
                self._changed.notify_all()
        assert built is not None
        return built

    def _raise_errors(self) -> None:
        if self._errors:
            raise SnapshotError(next(iter(sorted(self._errors.values()))))

    def _copy(self) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], str]]:
        return {kind: dict(items) for kind, items in self._parsed.items()}, dict(self._keys)

    def _overridden(
        self,
        parsed: dict[str, dict[str, Any]],
        keys: dict[tuple[str, str], str],
        overrides: Mapping[tuple[str, str], KubeObject | None],
    ) -> Snapshot:
        for (kind, key), obj in overrides.items():
            current = keys.get((kind, key))
            if current is not None:
                parsed[kind].pop(current, None)
            if obj is not None:
                typed_key, item = parse_one(obj)
                parsed[kind][typed_key] = item
        return Snapshot(parsed)

    def _made(self, make: Callable[[], Snapshot | None]) -> Snapshot | None:
        """``make()``, and with ``settle_heap`` the heap settled with it, the collector paused meanwhile:
        its first passes would otherwise walk the new index's few hundred thousand objects right after each
        build (docs/measurements.md)."""
        if self._settler is None:
            return make()
        with collector_paused():
            built = make()
            if built is not None:
                self._settler.settle()
        return built

    def _patches_after(self, version: int) -> bool:
        """Whether every change after ``version`` is one ``Snapshot.with_unbound`` takes (none: True).
        Called with the lock held."""
        return all(key is not None for v, key in self._log if v > version)

    def _unbound_changes(self) -> dict[tuple[str, str], Any] | None:
        """The pods and PodGroups changed since the last index, each (kind, key) as it is now (None: gone),
        when every change since was one ``Snapshot.with_unbound`` takes; else None. Called with the lock
        held."""
        changed: dict[tuple[str, str], Any] = {}
        for version, change in self._log:
            if version > self._base_version:
                if change is None:
                    return None
                changed[change] = None
        return {(kind, key): self._parsed[kind].get(key) for kind, key in changed}

    def _keep(self, built: Snapshot, version: int) -> None:
        """Remember an index of ``version``: the current one if nothing changed since, and the base the next
        patch starts from. Called with the lock held."""
        if version >= self._base_version:
            self._base, self._base_version = built, version
            self._log = [entry for entry in self._log if entry[0] > version]
        if self.version == version:
            self._built = built
        self._changed.notify_all()

    def indexing(self) -> bool:
        """Whether it indexes itself in the background (``keep_indexed`` and not stopped)."""
        with self._lock:
            return self._indexer is not None

    def ready(self) -> bool:
        """Whether the indexed snapshot of the current objects is built (``snapshot()`` returns it at once)."""
        with self._lock:
            return self._built is not None

    # ----- background indexing
    def keep_indexed(self, quiet: float = 0.25, *, settle_heap: bool = False) -> None:
        """Index in a daemon thread whenever ``quiet`` seconds have passed without an event since a change;
        with ``settle_heap``, every index of the current objects (in the background or on demand) settles
        the process's heap as it is built (``heap.HeapSettler``: for the one long-running cache of a process,
        never in a library's caller that did not ask)."""
        with self._lock:
            if self._indexer is not None:
                return
            self._stop = False
            self._stopping.clear()
            if settle_heap and self._settler is None:
                self._settler = HeapSettler()
            self._indexer = threading.Thread(
                target=self._index_loop, args=(quiet,), daemon=True, name="live-index"
            )
        self._indexer.start()

    def stop_indexing(self) -> None:
        with self._lock:
            self._stop = True
            self._stopping.set()
            self._changed.notify_all()
            indexer, self._indexer = self._indexer, None
        if indexer is not None and indexer is not threading.current_thread():
            indexer.join(timeout=5)

    def _index_loop(self, quiet: float) -> None:
        failed = -1  # a version whose index raised: wait for the next change instead of retrying it
        while True:
            with self._lock:
                while not self._stop and (self._built is not None or self._errors or self.version == failed):
                    self._changed.wait()
                if self._stop:
                    return
                left = self._last_change + quiet - time.monotonic()
                version = self.version
            if left > 0:
                self._stopping.wait(left)
                continue
            try:
                self.snapshot()
            except Exception:  # the caller that asks next gets the error itself
                failed = version

    def local(
        self,
        nodes: Iterable[str],
        gang_key: GangKey,
        overrides: Mapping[tuple[str, str], KubeObject | None] | None = None,
    ) -> Snapshot | None:
        """A ``Snapshot`` of only ``nodes`` (plus the nodes ``gang_key``'s own pods run on), the pods bound
        to them and the group's pods, with every PodGroup, CompositePodGroup, budget, priority class and
        Workload; ``overrides`` as in ``snapshot``. A gang that fits there without evictions fits in the
        whole cluster (more nodes only add room). None when the cluster has DRA objects: devices are
        shared across nodes (slices, claims), so only the whole snapshot answers."""
        from ..dra.devices import has_dra

        with self._lock:
            if self._errors:
                raise SnapshotError(next(iter(sorted(self._errors.values()))))
            if has_dra(self._parsed):
                return None
            members = set(self._in_group.get(gang_key, ()))
            pods = self._parsed["Pod"]
            wanted = set(nodes) | {pods[k].node_name for k in members if pods[k].node_name}
            keys = set(members)
            for name in wanted:
                keys |= self._on_node.get(name, set())
            parsed = {
                kind: (dict(items) if kind not in ("Node", "Pod") else {})
                for kind, items in self._parsed.items()
            }
            parsed["Node"] = {n: self._parsed["Node"][n] for n in wanted if n in self._parsed["Node"]}
            parsed["Pod"] = {k: pods[k] for k in keys}
            raw_keys = dict(self._keys)
        group_ns, group_name = split_gang_key(gang_key)
        for (kind, key), obj in (overrides or {}).items():
            current = raw_keys.get((kind, key))
            if current is not None:
                parsed[kind].pop(current, None)
            if obj is None:
                continue
            typed_key, item = parse_one(obj)
            if kind == "Pod" and not (
                item.node_name in wanted or (item.namespace == group_ns and item.group_name == group_name)
            ):
                continue  # elsewhere in the cluster: not part of this cut
            parsed[kind][typed_key] = item
        return Snapshot(parsed)
