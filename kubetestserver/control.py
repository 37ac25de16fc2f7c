"""Test-only control endpoints of the test server (under ``/__testserver/``) and a client for them.

They let a test drive a server running in another process (``python -m kubetestserver``):
inject faults, cut watches, expire the watch window, load or dump objects, read the request log.
``KubeTestServer`` offers the same operations in process; ``ControlClient`` does them over HTTP.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from .disruption import refresh_pdb_status
from .faults import Fault

if TYPE_CHECKING:
    from .httpapi import ApiState

PREFIX = "/__testserver/"


def request_log(state: ApiState, path_contains: str = "", method: str | None = None) -> list[dict[str, Any]]:
    return [
        {"time": t, "method": m, "path": p, "query": q, "code": c}
        for (t, m, p, q, c) in list(state.requests)
        if path_contains in p and (method is None or m == method)
    ]


def handle(state: ApiState, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
    action = path[len(PREFIX) :].strip("/")
    store, faults = state.store, state.faults
    if action == "faults" and method == "POST":
        fault = faults.add(Fault(**(body or {})))
        return 201, {"fault": fault.__dict__}
    if action == "faults" and method == "GET":
        return 200, {"faults": faults.snapshot()}
    if action == "faults" and method == "DELETE":
        faults.clear()
        return 200, {}
    if action == "drop-watches" and method == "POST":
        faults.drop_watches()
        return 200, {}
    if action == "expire-watch-window" and method == "POST":
        return 200, {"resourceVersion": str(store.compact())}
    if action == "load" and method == "POST":
        created, skipped = store.load(body if isinstance(body, list) else [body or {}])
        refresh_pdb_status(store, only_missing=True)
        return 200, {"created": created, "skipped": skipped}
    if action == "dump" and method == "GET":
        return 200, {"kind": "List", "apiVersion": "v1", "items": store.dump()}
    if action == "finish-terminating" and method == "POST":
        return 200, {"deleted": store.finish_terminating()}
    if action == "refresh-pdbs" and method == "POST":
        return 200, {"updated": refresh_pdb_status(store)}
    if action == "tokens" and method == "POST":
        body = body or {}
        user = state.tokens.add(body["token"], body["username"], body.get("groups"), body.get("uid", ""))
        return 201, {"user": user}
    if action == "tokens" and method == "DELETE":
        if (body or {}).get("token"):
            return 200, {"removed": state.tokens.remove(body["token"])}
        state.tokens.clear()
        return 200, {}
    if action == "requests" and method == "GET":
        return 200, {"requests": request_log(state, query.get("path", ""), query.get("method"))}
    if action == "requests" and method == "DELETE":
        state.requests.clear()
        return 200, {}
    if action == "settings" and method == "POST":
        for key in ("bookmark_interval", "default_watch_timeout"):
            if key in (body or {}):
                setattr(state, key, float(body[key]))
        for key in ("graceful_pod_deletion", "recreate_deleted_pods"):
            if key in (body or {}):
                setattr(store, key, bool(body[key]))
        return 200, {"recreated_pods": store.recreated_pods}
    return 404, {"error": f"unknown control action {method} {action!r}"}


class ControlClient:
    """Drive a test server in another process: ``ControlClient("http://127.0.0.1:PORT")``."""

    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, action: str, body: Any = None, query: str = "") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.url}{PREFIX}{action}{query}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"test server control {method} {action}: {exc.code} {exc.read()!r}") from exc

    def add_fault(
        self,
        path: str,
        code: int = 500,
        *,
        method: str | None = None,
        times: int | None = 1,
        message: str = "",
        delay: float = 0.0,
    ) -> dict:
        return self._call(
            "POST",
            "faults",
            {
                "path": path,
                "code": code,
                "method": method,
                "times": times,
                "message": message,
                "delay": delay,
            },
        )["fault"]

    def fail_eviction(
        self,
        namespace: str,
        name: str,
        code: int = 500,
        *,
        times: int | None = 1,
        message: str = "",
        delay: float = 0.0,
    ) -> dict:
        import re

        path = f"^/api/v1/namespaces/{re.escape(namespace)}/pods/{re.escape(name)}/eviction$"
        return self.add_fault(path, code, method="POST", times=times, message=message, delay=delay)

    def faults(self) -> list[dict]:
        """The fault rules with their ``hits`` (a rule is hit when a request arrives, before its delay) and
        ``finished`` (requests it took that have been acted on and answered)."""
        return self._call("GET", "faults")["faults"]

    def clear_faults(self) -> None:
        self._call("DELETE", "faults")

    def drop_watches(self) -> None:
        self._call("POST", "drop-watches", {})

    def expire_watch_window(self) -> int:
        return int(self._call("POST", "expire-watch-window", {})["resourceVersion"])

    def load(self, objects: list[dict]) -> int:
        return self._call("POST", "load", objects)["created"]

    def dump(self) -> list[dict]:
        return self._call("GET", "dump")["items"]

    def finish_terminating(self) -> int:
        return self._call("POST", "finish-terminating", {})["deleted"]

    def refresh_pdbs(self) -> int:
        return self._call("POST", "refresh-pdbs", {})["updated"]

    def requests(self, path_contains: str = "", method: str | None = None) -> list[dict]:
        from urllib.parse import urlencode

        params = {"path": path_contains, **({"method": method} if method else {})}
        return self._call("GET", "requests", query="?" + urlencode(params))["requests"]

    def add_token(self, token: str, username: str, groups: list[str] | None = None, uid: str = "") -> dict:
        """TokenReview authenticates ``token`` as ``username`` (groups get ``system:authenticated``)."""
        body = {"token": token, "username": username, "groups": groups or [], "uid": uid}
        return self._call("POST", "tokens", body)["user"]

    def remove_token(self, token: str) -> bool:
        return self._call("DELETE", "tokens", {"token": token})["removed"]

    def review_counts(self) -> dict[str, int]:
        """How many TokenReviews and SubjectAccessReviews the server answered so far."""
        return {
            "tokenreviews": len(self.requests("/tokenreviews", method="POST")),
            "subjectaccessreviews": len(self.requests("/subjectaccessreviews", method="POST")),
        }

    def clear_requests(self) -> None:
        self._call("DELETE", "requests")

    def settings(self, **values: Any) -> dict:
        """Change the given settings; answers the server's counters (``recreated_pods``)."""
        return self._call("POST", "settings", values)
