"""HTTP front of the test server: Kubernetes REST paths, JSON bodies, Status errors, chunked watches."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scheduler.kube.resources import PDBS, PODS, Resource, find_resource

from . import control, discovery, errors, reviews
from .conversion import from_storage
from .disruption import evict, refresh_pdb_status
from .faults import Faults
from .store import ObjectStore


@dataclass
class ApiState:
    store: ObjectStore
    faults: Faults = field(default_factory=Faults)
    tokens: reviews.Tokens = field(default_factory=reviews.Tokens)
    bookmark_interval: float = 5.0
    default_watch_timeout: float = 1800.0
    stopping: threading.Event = field(default_factory=threading.Event)
    # Every API request answered: (unix time, method, path, query string, HTTP code).
    requests: deque = field(default_factory=lambda: deque(maxlen=20_000))


@dataclass
class Route:
    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_route(path: str) -> Route | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    resource = find_resource(group, version, rest[0])
    if resource is None or (namespace is not None and not resource.namespaced):
        return None
    return Route(resource, namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None)


def _strip_type(obj: dict) -> dict:
    # list items carry no apiVersion/kind on a real API server
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


class _Abort(Exception):
    """Drop the connection without an answer."""


def make_handler(state: ApiState) -> type[BaseHTTPRequestHandler]:
    class KubeApiHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "gangweb-kube-testserver/1"
        timeout = 120  # idle keep-alive connections
        disable_nagle_algorithm = True  # headers and body go out as separate writes

        def log_message(self, format: str, *args: Any) -> None:
            pass

        # ----- plumbing
        def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body, separators=(",", ":")).encode()
            self._log(code)  # before answering: a client that saw the answer finds it in the log
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_error(self, exc: errors.ApiError) -> None:
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
            self._send_json(exc.code, exc.status(), headers)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError as exc:
                raise errors.bad_request(f"the request body is not valid JSON: {exc}") from exc

        def _log(self, code: int) -> None:
            if not self._logged and not self._url.path.startswith(control.PREFIX):
                state.requests.append((time.time(), self.command, self._url.path, self._url.query, code))
            self._logged = True

        def _dispatch(self, method: str) -> None:
            self._url = url = urlsplit(self.path)
            self._logged = False
            self._query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            try:
                body = self._body() if method in ("POST", "PUT", "PATCH", "DELETE") else None
                if url.path.startswith(control.PREFIX):
                    code, answer = control.handle(state, method, url.path, self._query, body)
                    self._send_json(code, answer)
                    return
                fault = state.faults.take(method, url.path)
                try:
                    self._answer(method, url.path, body, fault)
                finally:
                    if fault:
                        state.faults.finish(fault)
            except errors.ApiError as exc:
                self._send_error(exc)
            except _Abort:
                self.close_connection = True
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            except Exception as exc:  # a bug here must reach the client as a 500, not a hung request
                self._send_error(errors.ApiError(500, "InternalError", f"test server error: {exc!r}"))
            finally:
                self._log(0)  # no answer (dropped)

        def _answer(self, method: str, path: str, body, fault) -> None:
            if fault and fault.delay:
                time.sleep(fault.delay)
            if fault and fault.code:
                raise fault.error()
            answer = discovery.handle(path, self.headers.get("Host", ""))
            if answer is not None:
                self._send_json(200, answer)
                return
            review = reviews.handle(state.store, state.tokens, method, path, body)
            if review is not None:
                self._send_json(*review)
                return
            route = parse_route(path)
            if route is None:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
            self._serve(method, route, body)

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_PUT(self) -> None:
            self._dispatch("PUT")

        def do_PATCH(self) -> None:
            self._dispatch("PATCH")

        def do_DELETE(self) -> None:
            self._dispatch("DELETE")

        # ----- API verbs
        def _serve(self, method: str, route: Route, body: Any) -> None:
            store, r, q = state.store, route.resource, self._query
            dry_run = q.get("dryRun") == "All"
            if (
                route.subresource not in (None, "status", "eviction")
                or (route.subresource == "eviction" and (r != PODS or method != "POST"))
                or (route.subresource == "status" and not r.has_status)
            ):
                raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
            if method in ("POST", "PUT", "PATCH") and not isinstance(body, (dict, list)):
                raise errors.bad_request("a request body is required")
            if method == "GET" and route.name is None:
                if q.get("watch") in ("true", "1"):
                    self._watch(route)
                else:
                    self._list(route)
            elif method == "GET":
                self._send_json(200, store.get(r, route.namespace, route.name))
            elif method == "POST" and route.name is None:
                created = store.create(r, body, route.namespace, dry_run=dry_run, admit=True)
                if r == PDBS and not created.get("status") and not dry_run:
                    refresh_pdb_status(store, route.namespace, only_missing=True)
                    created = store.get(r, route.namespace, created["metadata"]["name"])
                self._send_json(201, created)
            elif method == "POST":  # pods/{name}/eviction
                self._send_json(201, evict(store, route.namespace or "", route.name or "", body, dry_run))
            elif method == "PUT" and route.name:
                self._send_json(
                    200,
                    store.update(
                        r, route.namespace, route.name, body, subresource=route.subresource, dry_run=dry_run
                    ),
                )
            elif method == "PATCH" and route.name:
                content_type = self.headers.get("Content-Type", "")
                if "apply-patch" in content_type:
                    raise errors.ApiError(
                        415, "UnsupportedMediaType", "server-side apply is not supported by the test server"
                    )
                self._send_json(
                    200,
                    store.patch(
                        r,
                        route.namespace,
                        route.name,
                        content_type,
                        body,
                        subresource=route.subresource,
                        dry_run=dry_run,
                    ),
                )
            elif method == "DELETE" and route.name:
                options = body if isinstance(body, dict) else {}
                grace = options.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
                last, gone = store.delete(
                    r,
                    route.namespace,
                    route.name,
                    preconditions=options.get("preconditions"),
                    grace_period_seconds=None if grace in (None, "") else int(grace),
                    dry_run=dry_run or "All" in (options.get("dryRun") or []),
                )
                if r.returns_deleted_object or not gone:
                    self._send_json(200, last)
                else:
                    meta = last["metadata"]
                    self._send_json(
                        200,
                        errors.success_status(
                            200,
                            {
                                "name": meta["name"],
                                "group": r.group,
                                "kind": r.plural,
                                "uid": meta.get("uid"),
                            },
                        ),
                    )
            else:
                raise errors.ApiError(405, "MethodNotAllowed", f"{method} is not supported here")

        def _list(self, route: Route) -> None:
            q = self._query
            wanted = q.get("resourceVersion")
            current = state.store.resource_version
            if wanted not in (None, "", "0"):
                if not wanted.isdigit():
                    raise errors.bad_request(f"invalid resourceVersion {wanted!r}")
                if int(wanted) > current:
                    raise errors.ApiError(
                        504, "Timeout", f"Too large resource version: {wanted}, current: {current}"
                    )
                if q.get("resourceVersionMatch") == "Exact" and int(wanted) != current:
                    raise errors.gone(f"resource version {wanted} is not the current one ({current})")
            after, list_rv = None, None
            if q.get("continue"):
                try:
                    token = json.loads(base64.urlsafe_b64decode(q["continue"]))
                    list_rv, after = int(token["rv"]), (str(token["after"][0]), str(token["after"][1]))
                except (ValueError, KeyError, TypeError, IndexError) as exc:
                    raise errors.bad_request("invalid continue token") from exc
            try:
                limit = max(0, int(q.get("limit") or 0))
            except ValueError as exc:
                raise errors.bad_request("invalid limit") from exc
            page = state.store.list_shared(
                route.resource,
                route.namespace,
                q.get("labelSelector"),
                q.get("fieldSelector"),
                after=after,
                limit=limit,
            )
            # later pages keep the first page's resourceVersion (their content is read now: see docs)
            meta: dict[str, Any] = {"resourceVersion": str(list_rv or page.resource_version)}
            if page.more and page.items:
                last = page.items[-1]["metadata"]
                token = {
                    "rv": list_rv or page.resource_version,
                    "after": [last.get("namespace", ""), last["name"]],
                }
                meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
                if page.remaining is not None:
                    meta["remainingItemCount"] = page.remaining
            r = route.resource
            self._send_json(
                200,
                {
                    "kind": r.list_kind,
                    "apiVersion": r.api_version,
                    "metadata": meta,
                    "items": [_strip_type(from_storage(r, o)) for o in page.items],
                },
            )

        # ----- watch
        def _write_chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _event(self, type_: str, obj: dict) -> None:
            self._write_chunk(
                json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode() + b"\n"
            )

        def _watch(self, route: Route) -> None:
            from .selectors import parse_field_selector, parse_label_selector

            q, r, store = self._query, route.resource, state.store
            label_ok, field_ok = (
                parse_label_selector(q.get("labelSelector")),
                parse_field_selector(q.get("fieldSelector")),
            )

            def wanted(obj: dict) -> bool:
                return (route.namespace is None or obj["metadata"].get("namespace") == route.namespace) and (
                    label_ok(obj) and field_ok(obj)
                )

            start = q.get("resourceVersion") or ""
            if start and not start.isdigit():
                raise errors.bad_request(f"invalid resourceVersion {start!r}")
            filtered = bool(q.get("labelSelector") or q.get("fieldSelector"))
            timeout = float(q.get("timeoutSeconds") or state.default_watch_timeout)
            deadline = time.monotonic() + timeout
            bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
            generation = state.faults.watch_generation
            self._log(200)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            if start in ("", "0") or q.get("sendInitialEvents") == "true":
                page = store.list_shared(r, route.namespace, q.get("labelSelector"), q.get("fieldSelector"))
                position = page.resource_version
                for obj in page.items:
                    self._event("ADDED", from_storage(r, obj))
                if q.get("sendInitialEvents") == "true" and bookmarks:
                    self._event(
                        "BOOKMARK",
                        {
                            "kind": r.kind,
                            "apiVersion": r.api_version,
                            "metadata": {
                                "resourceVersion": str(position),
                                "annotations": {"k8s.io/initial-events-end": "true"},
                            },
                        },
                    )
            else:
                position = int(start)
                if position > store.resource_version:
                    # e.g. a client that outlived a restarted test server; it must list again
                    self._event(
                        "ERROR",
                        errors.ApiError(
                            504,
                            "Timeout",
                            f"Too large resource version: {position}, current: {store.resource_version}",
                        ).status(),
                    )
                    self._write_chunk(b"")
                    return
            next_bookmark = time.monotonic() + state.bookmark_interval
            while True:
                if state.faults.watch_generation != generation:
                    raise _Abort()
                if state.stopping.is_set():
                    break
                try:
                    changes, current = store.changes_since(r.storage_key, position)
                except errors.ApiError as exc:
                    self._event("ERROR", exc.status())
                    break
                for change in changes:
                    type_ = change.type
                    if type_ == "MODIFIED" and change.previous is not None and filtered:
                        # an object entering or leaving the selection is ADDED/DELETED for this watch
                        before, now_in = wanted(change.previous), wanted(change.obj)
                        type_ = {
                            (True, True): "MODIFIED",
                            (False, True): "ADDED",
                            (True, False): "DELETED",
                        }.get((before, now_in), "")
                        if type_:
                            self._event(type_, from_storage(r, change.obj))
                    elif wanted(change.obj):
                        self._event(type_, from_storage(r, change.obj))
                position = max(position, current)
                now = time.monotonic()
                if now >= deadline:
                    break
                if bookmarks and now >= next_bookmark:
                    self._event(
                        "BOOKMARK",
                        {
                            "kind": r.kind,
                            "apiVersion": r.api_version,
                            "metadata": {"resourceVersion": str(position)},
                        },
                    )
                    next_bookmark = now + state.bookmark_interval
                # wake at least twice a second to notice dropped-watch faults and shutdown
                until = min(deadline, next_bookmark) if bookmarks else deadline
                store.wait_for_change(position, max(0.0, min(until - now, 0.5)))
            self._write_chunk(b"")

    return KubeApiHandler
