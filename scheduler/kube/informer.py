"""List + watch one resource and keep a cache of its raw objects, like client-go's reflector.

A watch resumes from the last resourceVersion it saw (events or bookmarks) after a dropped
connection; a 410 Gone (the server forgot that resourceVersion) makes it list again. Failures back
off exponentially with jitter, capped, and reset after a healthy watch.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..cluster import ClusterError, IndexFunc
from .apis import list_function, list_raw, stamp
from .resources import Resource

log = logging.getLogger(__name__)

Listener = Callable[[str, Resource, "dict | None"], None]


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


class _Index:
    """The objects one ``IndexFunc`` files under each value, kept with the cache (its lock held)."""

    def __init__(self, func: IndexFunc, objects: dict[str, dict]):
        self.func = func
        self.filed: dict[str, tuple[str, ...]] = {}  # object key -> its values, to unfile it
        self.by_value: dict[str, dict[str, dict]] = {}
        for key, obj in objects.items():
            self.put(key, obj)

    def put(self, key: str, obj: dict) -> None:
        self.drop(key)
        try:
            values = self.func(obj)
        except Exception:  # an odd object must not stop the watch that applies it (it would again, forever)
            log.warning("%s: not indexed by %s (malformed)", key, getattr(self.func, "__name__", self.func))
            values = ()
        if values:
            self.filed[key] = values
            for value in values:
                self.by_value.setdefault(value, {})[key] = obj

    def drop(self, key: str) -> None:
        for value in self.filed.pop(key, ()):
            bucket = self.by_value[value]
            del bucket[key]
            if not bucket:
                del self.by_value[value]


class Reflector:
    def __init__(
        self,
        api_client: client.ApiClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        watch_timeout: int = 300,
        request_timeout: tuple[float, float] = (5.0, 30.0),
        backoff: tuple[float, float] = (0.2, 10.0),
        listener: Listener | None = None,
        field_selector: str | None = None,
    ):
        self.resource = resource
        self._field_selector = field_selector
        self._api_client = api_client
        self._namespace = namespace
        self._watch_timeout = watch_timeout
        self._request_timeout = request_timeout
        self._backoff = backoff
        self._listener = listener
        self._objects: dict[str, dict] = {}
        self._indexes: dict[IndexFunc, _Index] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._response: Any = None  # the open watch stream
        self._thread: threading.Thread | None = None
        self.resource_version = ""
        self.synced = threading.Event()
        # counters, for tests and metrics
        self.lists = 0
        self.watches = 0
        self.bookmarks = 0
        self.expired = 0
        self.failures = 0
        self.last_error = ""

    # ----- reading the cache
    def objects(self) -> list[dict]:
        with self._lock:
            return list(self._objects.values())

    def get(self, key: str) -> dict | None:
        with self._lock:
            return self._objects.get(key)

    def add_index(self, func: IndexFunc) -> None:
        """Keep an index by ``func`` from now on (made from the cache now, then kept with each event and
        list): a reader of a few objects (one gang's pods) then never walks them all (docs/kube.md)."""
        with self._lock:
            if func not in self._indexes:
                self._indexes[func] = _Index(func, self._objects)

    def indexed(self, func: IndexFunc, value: str) -> list[dict]:
        """The cached objects ``func`` files under ``value`` (the index added on first use)."""
        self.add_index(func)
        with self._lock:
            return list(self._indexes[func].by_value.get(value, {}).values())

    # ----- lifecycle
    def use_client(self, api_client: client.ApiClient) -> None:
        """Talk through another client from the next request on (a forked process needs its own)."""
        self._api_client = api_client

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name=f"reflector-{self.resource.plural}", daemon=True
            )
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        response = self._response
        sock = getattr(getattr(response, "connection", None), "sock", None)
        if sock is not None:
            try:  # unblocks the reading thread at once
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    # ----- the loop
    def _run(self) -> None:
        need_list = True
        delay = self._backoff[0]
        while not self._stop.is_set():
            try:
                if need_list:
                    self.relist()
                    need_list = False
                started = time.monotonic()
                if self._watch_once() or time.monotonic() - started > 1.0:
                    delay = self._backoff[0]
                else:  # a watch that ends at once with nothing in it would otherwise spin
                    self._stop.wait(delay)
                    delay = min(delay * 2, self._backoff[1])
            except ApiException as exc:
                # 410: the server forgot our resourceVersion; "too large": it never knew it (a restarted
                # server with fresh storage). Either way only a new list gives a valid starting point.
                if exc.status == 410 or "Too large resource version" in str(exc.reason or ""):
                    self.expired += 1
                    need_list = True
                    log.info(
                        "%s: cannot watch from %s (%s), listing again",
                        self.resource.plural,
                        self.resource_version,
                        exc.reason,
                    )
                    continue
                delay = self._failed(exc, delay)
            except Exception as exc:  # connection refused/reset, timeouts, truncated streams
                delay = self._failed(exc, delay)

    def _failed(self, exc: Exception, delay: float) -> float:
        if self._stop.is_set():
            return delay
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:500]
        log.warning(
            "%s: list/watch failed (%s); retrying in %.1fs", self.resource.plural, self.last_error, delay
        )
        self._stop.wait(delay * random.uniform(0.8, 1.2))
        return min(delay * 2, self._backoff[1])

    def relist(self) -> None:
        items, resource_version = list_raw(
            self._api_client,
            self.resource,
            namespace=self._namespace,
            timeout=self._request_timeout,
            field_selector=self._field_selector,
        )
        fresh = {object_key(o): o for o in items}
        with self._lock:
            previous, self._objects = self._objects, fresh
            self._indexes = {func: _Index(func, fresh) for func in self._indexes}
        self.lists += 1
        if self._listener:
            # what changed while we were not watching, as the events a watch would have delivered
            for key, obj in previous.items():
                if key not in fresh:
                    self._listener("DELETED", self.resource, obj)
            for key, obj in fresh.items():
                old = previous.get(key)
                if old is None or old["metadata"].get("resourceVersion") != obj["metadata"].get(
                    "resourceVersion"
                ):
                    self._listener("ADDED" if old is None else "MODIFIED", self.resource, obj)
            self._listener("RELIST", self.resource, None)
        # Only now: a listener's view (the live snapshot) holds everything up to this resourceVersion.
        self.resource_version = resource_version
        self.synced.set()

    def _watch_once(self) -> int:
        """Watch until the server ends the stream; returns how many events (bookmarks too) came."""
        # The client's Watch helper cannot report ERROR events without building models
        # (deserialize=False trips over them), so the stream is read here, line by line, through
        # urllib3's public line iteration of the response (one JSON event a line, b"\n" kept).
        fn = list_function(self._api_client, self.resource, self._namespace)
        self.watches += 1
        selector = {"field_selector": self._field_selector} if self._field_selector else {}
        response = fn(
            **selector,
            watch=True,
            resource_version=self.resource_version or None,
            allow_watch_bookmarks=True,
            timeout_seconds=self._watch_timeout,
            # a silent stream past the server-side timeout means a dead connection
            _request_timeout=(self._request_timeout[0], self._watch_timeout + 30),
            _preload_content=False,
        )
        self._response = response
        received = 0
        try:
            for line in response:
                if self._stop.is_set():
                    break
                if not line.endswith(b"\n"):
                    break  # the stream was cut inside an event: resume from the last one applied
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise ApiException(
                        status=int(status.get("code") or 500),
                        reason=f"{status.get('reason')}: {status.get('message')}",
                    )
                self._apply(event)
                received += 1
        finally:
            self._response = None
            response.close()
            response.release_conn()
        return received

    def _apply(self, event: dict[str, Any]) -> None:
        type_, obj = event.get("type"), event.get("object") or {}
        new_version = (obj.get("metadata") or {}).get("resourceVersion")
        if type_ == "BOOKMARK":
            self.bookmarks += 1
            if new_version:
                self.resource_version = new_version
            return
        stamp(self.resource, obj)
        key = object_key(obj)
        with self._lock:
            if type_ == "DELETED":
                self._objects.pop(key, None)
                for index in self._indexes.values():
                    index.drop(key)
            else:
                self._objects[key] = obj
                for index in self._indexes.values():
                    index.put(key, obj)
        if self._listener:
            self._listener(str(type_), self.resource, obj)
        if new_version:  # after the listener: its view holds everything up to resource_version
            self.resource_version = new_version


class ReflectorsByReason:
    """One ``Reflector`` of ``resource`` per ``reason=`` field selector, started at its first read (the kube
    adapter's Events: observe mode reads kube-scheduler's ``Preempted`` ones, and only then)."""

    def __init__(
        self,
        resource: Resource,
        namespace: str | None,
        watch_timeout: int,
        request_timeout: tuple[float, float],
    ) -> None:
        self.resource, self._namespace = resource, namespace
        self._watch_timeout, self._request_timeout = watch_timeout, request_timeout
        self._lock = threading.Lock()
        self.reflectors: dict[str | None, Reflector] = {}

    def objects(self, api_client: client.ApiClient, reason: str | None, timeout: float) -> list[dict]:
        """The cached objects of that reason (listed and watched from the first call; waits for the sync)."""
        with self._lock:
            reflector = self.reflectors.get(reason)
            if reflector is None:
                reflector = Reflector(
                    api_client,
                    self.resource,
                    namespace=self._namespace,
                    watch_timeout=self._watch_timeout,
                    request_timeout=self._request_timeout,
                    field_selector=f"reason={reason}" if reason else None,
                )
                self.reflectors[reason] = reflector
                reflector.start()
        if not reflector.synced.wait(timeout):
            raise ClusterError(
                f"{self.resource.plural} watch ({reason or 'every reason'}) not synced in {timeout:g}s"
            )
        return reflector.objects()

    def use_client(self, api_client: client.ApiClient) -> None:
        with self._lock:
            for reflector in self.reflectors.values():
                reflector.use_client(api_client)

    def stop(self) -> None:
        with self._lock:
            reflectors, self.reflectors = list(self.reflectors.values()), {}
        for reflector in reflectors:
            reflector.stop()
