"""In-memory object storage with API-server semantics: resourceVersions, watch history, conflicts.

This is the test server's state, kept apart from HTTP so that other code (the simulated cluster,
tests) can drive or observe the same objects directly. Stored dicts are never mutated in place
(every write stores a new dict), so references handed to the HTTP layer stay consistent.
"""

from __future__ import annotations

import bisect
import copy
import secrets
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler.engine.reading import read_snapshot  # bounded: sizes, aliases, file types (docs/engine.md)
from scheduler.kube.resources import PODS, PRIORITY_CLASSES, Resource, resource_for_object

from . import errors
from .conversion import from_storage, to_storage
from .history import Change, WatchHistory
from .objects import flatten, now_rfc3339
from .patching import JSON_PATCH, PatchError, apply_patch
from .priority import admit_podgroup
from .selectors import SelectorError, parse_field_selector, parse_label_selector


@dataclass(frozen=True)
class Page:
    items: list[dict]  # shared: do not mutate
    resource_version: int
    more: bool  # the limit cut the list
    remaining: int | None  # objects after this page, when known cheaply (no selectors)


class ObjectStore:
    def __init__(self, history_limit: int = 50_000):
        self._cond = threading.Condition(threading.RLock())
        self._objects: dict[str, dict[tuple[str, str], dict]] = {}
        self._key_order: dict[str, list[tuple[str, str]]] = {}  # sorted keys per storage, rebuilt lazily
        self._rv = 0
        self._history = WatchHistory(history_limit)
        self._listeners: list[Callable[[Change], None]] = []
        # Pods deleted (or evicted) with a grace period stay, terminating, until finish_terminating().
        self.graceful_pod_deletion = False
        # Called with every object about to be stored; raises ApiError (422) to refuse it.
        self.validator: Callable[[dict], None] | None = None
        # Play a StatefulSet-like controller: a deleted pod comes back at once under the same name, with a
        # new UID, running on the same node (stable names are what JobSet, LWS and Kubeflow pods have).
        self.recreate_deleted_pods = False
        self.recreated_pods = 0

    def locked(self) -> threading.Condition:
        """Hold this to make several store calls one atomic step (the lock is re-entrant)."""
        return self._cond

    # ----- reading
    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._rv

    def get(self, resource: Resource, namespace: str | None, name: str) -> dict:
        with self._cond:
            return from_storage(resource, copy.deepcopy(self._stored(resource, namespace, name)))

    def try_get(self, resource: Resource, namespace: str | None, name: str) -> dict | None:
        try:
            return self.get(resource, namespace, name)
        except errors.ApiError:
            return None

    def list_shared(
        self,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        *,
        after: tuple[str, str] | None = None,
        limit: int = 0,
    ) -> Page:
        """Matching stored objects (shared, read-only, storage shape) in (namespace, name) order, starting
        after the key ``after``, at most ``limit`` (0: all)."""
        try:
            label_ok = parse_label_selector(label_selector) if label_selector else None
            field_ok = parse_field_selector(field_selector) if field_selector else None
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc

        def wanted(obj: dict) -> bool:
            # field paths name the fields of the version asked for (events.k8s.io: regarding.name, ...)
            return (label_ok is None or label_ok(obj)) and (
                field_ok is None or field_ok(from_storage(resource, obj) if resource.storage else obj)
            )

        with self._cond:
            bucket = self._objects.get(resource.storage_key, {})
            keys = self._sorted_keys(resource.storage_key)
            first, end = 0, len(keys)
            if namespace is not None and resource.namespaced:
                first = bisect.bisect_left(keys, (namespace, ""))
                end = bisect.bisect_left(keys, (namespace + "\0", ""))
            if after is not None:
                first = max(first, bisect.bisect_right(keys, after))
            items: list[dict] = []
            position = first
            while position < end and not (limit and len(items) == limit):
                obj = bucket[keys[position]]
                if (label_ok is None and field_ok is None) or wanted(obj):
                    items.append(obj)
                position += 1
            more = (
                any(wanted(bucket[k]) for k in keys[position:end]) if label_ok or field_ok else position < end
            )
            remaining = (end - position) if label_ok is None and field_ok is None else None
            return Page(items, self._rv, more, remaining)

    def _sorted_keys(self, storage: str) -> list[tuple[str, str]]:
        keys = self._key_order.get(storage)
        if keys is None:
            keys = self._key_order[storage] = sorted(self._objects.get(storage, {}))
        return keys

    def list(self, resource: Resource, namespace: str | None = None, **selectors: str | None) -> list[dict]:
        page = self.list_shared(resource, namespace, **selectors)
        return [from_storage(resource, copy.deepcopy(o)) for o in page.items]

    def dump(self) -> list[dict]:
        """Every stored object, in storage shape (a snapshot a later ``load`` can restore)."""
        with self._cond:
            return [copy.deepcopy(o) for bucket in self._objects.values() for o in bucket.values()]

    # ----- writing
    def create(
        self,
        resource: Resource,
        obj: dict,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        admit: bool = False,
    ) -> dict:
        """Store a new object; ``admit`` runs the API server's admission (the HTTP path's POST does), while
        a caller setting up state writes it as it is, like an object already in etcd."""
        stored = self._create(resource, obj, namespace, dry_run, admit=admit)
        return from_storage(resource, copy.deepcopy(stored))

    def _create(
        self, resource: Resource, obj: dict, namespace: str | None, dry_run: bool, *, admit: bool = False
    ) -> dict:
        if not isinstance(obj, dict):
            raise errors.bad_request(f"a {resource.kind} must be a JSON object")
        obj = to_storage(resource, copy.deepcopy(obj))
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if resource.namespaced:
            namespace = namespace or meta.get("namespace") or "default"
            if meta.get("namespace") not in (None, namespace):
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise errors.invalid(
                    f"{resource.kind}: metadata.name: Required value: name or generateName is required"
                )
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        with self._cond:
            bucket = self._objects.setdefault(resource.storage_key, {})
            key = (meta.get("namespace", ""), meta["name"])
            if key in bucket:
                raise errors.already_exists(resource.plural, meta["name"], resource.group)
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_rfc3339())
            if "spec" in obj:
                meta.setdefault("generation", 1)
            if resource == PODS:
                obj.setdefault("status", {}).setdefault("phase", "Pending")
            if admit:
                admit_podgroup(resource, obj, self._objects.get(PRIORITY_CLASSES.storage_key, {}).values())
            if self.validator:
                self.validator(obj)
            if dry_run:
                meta["resourceVersion"] = str(self._rv)
            else:
                self._commit(resource.storage_key, key, "ADDED", obj)
            return obj

    def update(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        new: dict,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict:
        """A PUT: optimistic concurrency on ``metadata.resourceVersion`` (409 when stale, 422 when absent)."""
        if not isinstance(new, dict):
            raise errors.bad_request(f"a {resource.kind} must be a JSON object")
        with self._cond:
            current = self._stored(resource, namespace, name)
            wanted_rv = (new.get("metadata") or {}).get("resourceVersion")
            if not wanted_rv:
                raise errors.invalid(
                    f'{resource.kind} "{name}" is invalid: metadata.resourceVersion: '
                    "Invalid value: 0x0: must be specified for an update"
                )
            return self._write(resource, current, new, subresource, wanted_rv, dry_run)

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict:
        with self._cond:
            current = self._stored(resource, namespace, name)
            view = from_storage(resource, copy.deepcopy(current))
            try:
                patched = apply_patch(content_type, view, patch)
            except PatchError as exc:
                raise errors.invalid(str(exc)) from exc
            if not isinstance(patched, dict):
                raise errors.invalid("the patch does not produce an object")
            if content_type.startswith(JSON_PATCH):
                wanted_rv = (patched.get("metadata") or {}).get("resourceVersion")
            else:
                wanted_rv = ((patch.get("metadata") or {}) if isinstance(patch, dict) else {}).get(
                    "resourceVersion"
                )
            return self._write(resource, current, patched, subresource, wanted_rv, dry_run)

    def mutate(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        change: Callable[[dict], None],
        *,
        subresource: str | None = None,
    ) -> dict:
        """Read-modify-write under the store lock: ``change`` edits a copy of the object in place."""
        with self._cond:
            current = self._stored(resource, namespace, name)
            edited = from_storage(resource, copy.deepcopy(current))
            change(edited)
            return self._write(resource, current, edited, subresource, None, False)

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        preconditions: dict | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> tuple[dict, bool]:
        """Delete (or start terminating) an object; returns its last state and whether it is gone."""
        with self._cond:
            current = self._stored(resource, namespace, name)
            meta = current["metadata"]
            # The wording is the API server's (apiserver/pkg/storage: Preconditions.Check).
            for field, key, label in (
                ("uid", "uid", "UID"),
                ("resourceVersion", "resourceVersion", "ResourceVersion"),
            ):
                wanted = (preconditions or {}).get(field)
                if wanted and wanted != meta.get(key):
                    raise errors.ApiError(
                        409,
                        "Conflict",
                        f"Precondition failed: {label} in precondition: {wanted}, {label} in object meta: "
                        f"{meta.get(key)}",
                    )
            key = (meta.get("namespace", ""), name)
            graceful = (
                resource == PODS and self.graceful_pod_deletion and grace_period_seconds != 0
            ) or bool(meta.get("finalizers"))
            if graceful:
                terminating = copy.deepcopy(current)
                terminating["metadata"].setdefault("deletionTimestamp", now_rfc3339())
                if resource == PODS:
                    grace = grace_period_seconds
                    if grace is None:
                        grace = (current.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                    terminating["metadata"].setdefault("deletionGracePeriodSeconds", grace)
                if not dry_run and terminating != current:
                    self._commit(resource.storage_key, key, "MODIFIED", terminating)
                return from_storage(resource, copy.deepcopy(terminating)), False
            if not dry_run:
                self._commit(resource.storage_key, key, "DELETED", copy.deepcopy(current))
            return from_storage(resource, copy.deepcopy(current)), True

    def finish_terminating(self) -> int:
        """Remove terminating pods without finalizers, as kubelets would after the grace period."""
        with self._cond:
            done = [
                obj
                for obj in self._objects.get(PODS.storage_key, {}).values()
                if obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers")
            ]
            for obj in done:
                key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                self._commit(PODS.storage_key, key, "DELETED", copy.deepcopy(obj))
            return len(done)

    def load(self, objects: Iterable[dict]) -> tuple[int, list[str]]:
        """Create every object of a snapshot (``List``s flattened); returns (created, skipped kinds)."""
        created, skipped = 0, []
        for obj in flatten(objects):
            resource = resource_for_object(obj)
            if resource is None:
                skipped.append(str(obj.get("kind")))
                continue
            meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
            self._create(resource, {**obj, "metadata": meta}, meta.get("namespace"), False)
            created += 1
        return created, skipped

    def sync(self, objects: Iterable[dict]) -> dict[str, int]:
        """Make the store hold exactly ``objects`` (for the kinds they include), writing only the
        differences, so watchers see ADDED/MODIFIED/DELETED as if a cluster had changed. This is how
        another owner of the state (the simulated cluster) can publish itself through the server."""
        wanted: dict[str, dict[tuple[str, str], tuple[Resource, dict]]] = {}
        for obj in flatten(objects):
            resource = resource_for_object(obj)
            if resource is None:
                continue
            meta = obj.get("metadata") or {}
            key = (meta.get("namespace", "") if resource.namespaced else "", meta.get("name", ""))
            wanted.setdefault(resource.storage_key, {})[key] = (resource, obj)
        counts = {"ADDED": 0, "MODIFIED": 0, "DELETED": 0}
        with self._cond:
            for storage, items in wanted.items():
                bucket = self._objects.setdefault(storage, {})
                for key in [k for k in bucket if k not in items]:
                    self._commit(storage, key, "DELETED", copy.deepcopy(bucket[key]))
                    counts["DELETED"] += 1
                for key, (resource, obj) in items.items():
                    new = to_storage(resource, copy.deepcopy(obj))
                    new.setdefault("metadata", {})
                    current = bucket.get(key)
                    if current is None:
                        new["metadata"].pop("resourceVersion", None)
                        self._create(resource, new, key[0] or None, False)
                        counts["ADDED"] += 1
                        continue
                    # keep what the server assigned and the publisher may not know
                    old_meta = current["metadata"]
                    kept = {
                        f: old_meta[f] for f in ("uid", "creationTimestamp", "generation") if f in old_meta
                    }
                    new["metadata"] = {
                        **kept,
                        **new["metadata"],
                        "resourceVersion": old_meta["resourceVersion"],
                    }
                    if new != current:
                        self._commit(storage, key, "MODIFIED", new)
                        counts["MODIFIED"] += 1
        return counts

    def load_file(self, path: str | Path) -> tuple[int, list[str]]:
        return self.load(d for d in read_snapshot(path) if isinstance(d, dict))

    # ----- watching
    def subscribe(self, listener: Callable[[Change], None]) -> None:
        """Call ``listener`` after every committed change (under the store lock: keep it short)."""
        self._listeners.append(listener)

    def changes_since(self, storage: str, resource_version: int) -> tuple[list[Change], int]:
        """Changes of one storage after ``resource_version``, and the store's resourceVersion they reach;
        410 Gone when ``resource_version`` is older than the retained window."""
        with self._cond:
            return self._history.since(storage, resource_version), self._rv

    def wait_for_change(self, after: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._rv > after, timeout=timeout)

    def compact(self) -> int:
        """Forget the watch history: every watch from an older resourceVersion now gets 410 Gone."""
        with self._cond:
            self._history.forget(self._rv)
            self._cond.notify_all()
            return self._rv

    def wake_watchers(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # ----- internals
    def _stored(self, resource: Resource, namespace: str | None, name: str) -> dict:
        key = (namespace or "", name) if resource.namespaced else ("", name)
        obj = self._objects.get(resource.storage_key, {}).get(key)
        if obj is None:
            raise errors.not_found(resource.plural, name, resource.group)
        return obj

    def _write(
        self,
        resource: Resource,
        current: dict,
        new: dict,
        subresource: str | None,
        wanted_rv: str | None,
        dry_run: bool,
    ) -> dict:
        meta = current["metadata"]
        if wanted_rv and str(wanted_rv) != meta["resourceVersion"]:
            raise errors.conflict(resource.plural, meta["name"], resource.group)
        uid = (new.get("metadata") or {}).get("uid")
        if uid and uid != meta.get("uid"):  # the API server keeps a UID it is given, and holds it immutable
            raise errors.invalid(
                f'{resource.kind} "{meta["name"]}" is invalid: metadata.uid: Invalid value: "{uid}": '
                "field is immutable"
            )
        new = to_storage(resource, copy.deepcopy(new))
        if resource.has_status and subresource == "status":
            result = copy.deepcopy(current)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
        else:
            result = new
            if resource.has_status:
                # the main resource ignores status writes, as on a real API server
                if "status" in current:
                    result["status"] = copy.deepcopy(current["status"])
                else:
                    result.pop("status", None)
        new_meta = result.setdefault("metadata", {})
        for field in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if field in meta:
                new_meta[field] = meta[field]
            else:
                new_meta.pop(field, None)
        new_meta["resourceVersion"] = meta["resourceVersion"]
        if result.get("spec") != current.get("spec") and "generation" in meta:
            new_meta["generation"] = meta["generation"] + 1
        if result == current:
            return from_storage(resource, copy.deepcopy(current))
        key = (meta.get("namespace", ""), meta["name"])
        if self.validator:
            self.validator(result)
        if dry_run:
            return from_storage(resource, result)
        if new_meta.get("deletionTimestamp") and meta.get("finalizers") and not new_meta.get("finalizers"):
            # the last finalizer of an object being deleted was removed: it goes now
            self._commit(resource.storage_key, key, "DELETED", result)
        else:
            self._commit(resource.storage_key, key, "MODIFIED", result)
        return from_storage(resource, copy.deepcopy(result))

    def _commit(self, storage: str, key: tuple[str, str], type_: str, obj: dict) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        bucket = self._objects.setdefault(storage, {})
        previous = bucket.get(key) if type_ == "MODIFIED" else None
        if type_ == "DELETED":
            bucket.pop(key, None)
            self._key_order.pop(storage, None)
        else:
            if key not in bucket:
                self._key_order.pop(storage, None)
            bucket[key] = obj
        change = Change(self._rv, storage, type_, obj, previous)
        self._history.append(change)
        for listener in self._listeners:
            listener(change)
        self._cond.notify_all()
        if type_ == "DELETED" and storage == PODS.storage_key and self.recreate_deleted_pods:
            self._commit(storage, key, "ADDED", _replacement(obj))
            self.recreated_pods += 1


def _replacement(pod: dict) -> dict:
    """The pod a controller creates in place of a deleted one: same name and spec, a new identity."""
    new = copy.deepcopy(pod)
    meta = new["metadata"]
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        meta.pop(field, None)
    meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339())
    status = new.setdefault("status", {})
    status["phase"] = "Running"
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
    return new
