"""Snapshot uploads (``simulate/``, ``simulate/podgroups/``, the deprecated ``/api/plan/``) within bounds
the web process can afford: checked before the body is read, parsed and planned outside the process.

- ``UploadGuard`` wraps the ASGI application (``gangweb/asgi.py``). Before the application reads a byte
  of such a POST's body it refuses a body declared larger than ``GANGWEB_SNAPSHOT_MAX_BYTES`` (413) or
  sent without a declared length (411), then runs the request through Django once with the body
  withheld (a *preflight*: the middleware, the authentication, the permission and the throttle of the
  view, which answers 204 right after them), and answers that refusal (401, 403, 429) instead, the body
  unread. Only then does the request go through for real, its throttle already counted.
- Django spools the body to a temporary file (past ``FILE_UPLOAD_MAX_MEMORY_SIZE``), and the multipart
  parser the file part too. A JSON body larger than ``IN_PROCESS_BYTES`` is not parsed here: it is
  handed to the worker whole, and so is every uploaded file.
- ``Worker`` runs ``gangweb/api/v1/uploadworker.py`` in a process of its own, under an address-space
  limit (``GANGWEB_SNAPSHOT_MEMORY_BYTES``): the parsed objects, many times the bytes, and the engine's
  work on them live there, and the interpreter lock they would hold is that process's. One at a time
  per web process, so that the limit bounds what uploads add to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any

from django.conf import settings
from rest_framework.exceptions import APIException, NotFound, ParseError, ValidationError

from gangweb.api.v1.parsers import TooLarge
from gangweb.api.v1.problems import CONTENT_TYPE, problem
from gangweb.api.v1.uploadworker import MEMORY_EXIT
from scheduler.engine.reading import MAX_BYTES_ENV, max_snapshot_bytes

UPLOAD_PATHS = frozenset({"/api/v1/simulate/", "/api/v1/simulate/podgroups/", "/api/plan/"})
# A JSON body up to this size is parsed in the web process (a live-cluster call, a small inline snapshot).
IN_PROCESS_BYTES = 2**20
MEMORY_ENV = "GANGWEB_SNAPSHOT_MEMORY_BYTES"
# How long one upload may take to be read and planned, and to wait for the worker another one holds.
WORKER_SECONDS = 120
PREFLIGHT = "gangweb.preflight"
CHECKED = "gangweb.checked"

_ONE_AT_A_TIME = threading.BoundedSemaphore(1)
# One BLAS thread and two malloc arenas: what the worker maps stays close to what it uses.
_WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"}


class Busy(APIException):
    status_code = 503
    default_detail = "another snapshot is being read; try again shortly"


def too_large_detail() -> str:
    return f"the body is larger than the {max_snapshot_bytes():,}-byte limit ({MAX_BYTES_ENV})"


# --- before the body: the ASGI guard ------------------------------------------------------------------


class UploadGuard:
    """The ASGI middleware in front of Django for the upload paths (see the module's docstring)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in UPLOAD_PATHS:
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"").strip()
        if not declared:
            if headers.get(b"transfer-encoding"):
                return await _refuse(send, scope, 411, "declare the body's length (Content-Length)")
            declared = b"0"
        if not declared.isdigit():
            return await _refuse(send, scope, 400, "Content-Length is not a number")
        if int(declared) > max_snapshot_bytes():
            return await _refuse(send, scope, 413, too_large_detail())
        if int(declared) == 0:  # nothing to withhold: the view checks it as any other request
            return await self.app(scope, receive, send)
        refused = await self._preflight(scope)
        if refused is not None:
            for message in refused:
                await send(message)
            return None
        return await self.app({**scope, CHECKED: True}, receive, send)

    async def _preflight(self, scope) -> list[dict] | None:
        """The answer of the request without its body: None when it passed (204), else its messages."""
        headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length", b"transfer-encoding")]
        asked = {**scope, "headers": [*headers, (b"content-length", b"0")], PREFLIGHT: True}
        messages: list[dict] = []
        gave_body = False
        never = None

        async def receive():
            nonlocal gave_body, never
            if not gave_body:
                gave_body = True
                return {"type": "http.request", "body": b"", "more_body": False}
            never = never or asyncio.get_running_loop().create_future()
            return await never  # no disconnect to report: Django stops listening when it has answered

        async def capture(message):
            messages.append(message)

        await self.app(asked, receive, capture)
        start = next((m for m in messages if m["type"] == "http.response.start"), None)
        return None if start is not None and start["status"] == 204 else messages


async def _refuse(send, scope, status: int, detail: str) -> None:
    body = json.dumps(problem(status, detail, instance=scope["path"])).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", CONTENT_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def preflight(request) -> bool:
    """This request is the guard's preflight: checked (authentication, permission, throttle), not served."""
    return bool(getattr(request._request, "scope", {}).get(PREFLIGHT))


def checked(request) -> bool:
    """The guard's preflight passed for this request: its throttle is counted already."""
    return bool(getattr(request._request, "scope", {}).get(CHECKED))


# --- the body: in the web process, or to the worker ---------------------------------------------------


def is_large_json(request) -> bool:
    """A JSON body too large to parse in the web process."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    return length > IN_PROCESS_BYTES and request.content_type == "application/json"


def memory_limit() -> int:
    return settings.GANGWEB_SNAPSHOT_MEMORY_BYTES


class Worker:
    """One run of the snapshot worker on a body or a file; ``close`` ends it and removes what it read."""

    def __init__(self, job: str, path: str, body: str, *, owned: bool, scope=None, fields=None):
        self.job, self.path, self.body, self.owned = job, path, body, owned
        self._held = _ONE_AT_A_TIME.acquire(timeout=WORKER_SECONDS)
        if not self._held:
            self._remove()
            raise Busy()
        try:
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gangweb.api.v1.uploadworker", str(memory_limit())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                text=True,
                env={**os.environ, **_WORKER_ENV},
            )
        except BaseException:
            _ONE_AT_A_TIME.release()
            self._remove()
            raise
        self._write(
            {
                "job": job,
                "path": path,
                "body": body,
                "fields": fields,
                "scope": scope
                and {
                    "user": scope.user,
                    "everywhere": scope.everywhere,
                    "perNamespace": dict(scope.per_namespace),
                },
            }
        )

    @classmethod
    def for_body(cls, request, job: str, scope) -> Worker:
        """A worker on the request's whole JSON body, copied from Django's spool to a file of its own."""
        with tempfile.NamedTemporaryFile(prefix="gangweb-upload-", delete=False) as copy:
            shutil.copyfileobj(request._request, copy, 2**20)
        return cls(job, copy.name, "json", owned=True, scope=scope)

    @classmethod
    def for_file(cls, upload, job: str, scope, fields: dict) -> Worker:
        """A worker on an uploaded file: read where the upload handler wrote it, or from a copy."""
        if hasattr(upload, "temporary_file_path"):
            return cls(job, upload.temporary_file_path(), "file", owned=False, scope=scope, fields=fields)
        with tempfile.NamedTemporaryFile(prefix="gangweb-upload-", delete=False) as copy:
            upload.seek(0)
            shutil.copyfileobj(upload, copy, 2**20)
        return cls(job, copy.name, "file", owned=True, scope=scope, fields=fields)

    def fields(self) -> tuple[dict[str, Any], bool]:
        """A JSON body's fields but the snapshot, and whether it has one."""
        line = self.process.stdout.readline()
        if not line:
            self._fail()
        message = json.loads(line)
        if "fields" not in message:
            self._fail(message)
        return message["fields"], bool(message["snapshot"])

    def result(self, fields: dict[str, Any] | None = None) -> Any:
        """The worker's answer (``fields``: the validated fields a JSON body's worker waits for)."""
        if self.body == "json":
            self._write(fields)
        try:
            out, _ = self.process.communicate(timeout=WORKER_SECONDS)
        except subprocess.TimeoutExpired:
            self.close()
            raise Busy(f"reading and planning the snapshot took longer than {WORKER_SECONDS} s") from None
        last = out.strip().rpartition("\n")[2]
        message = json.loads(last) if last else None
        if message is not None and message.get("status") == 200:
            return message["data"]
        self._fail(message)

    def _fail(self, message: dict | None = None):
        """Raise the error the worker's answer (or its end without one) stands for."""
        if message is not None and "errors" in message:
            raise ValidationError(message["errors"])
        if message is not None and message.get("status") == 404:
            raise NotFound(message["detail"])
        if message is not None and "detail" in message:
            raise ParseError(message["detail"])
        self.process.wait()
        if self.process.returncode == MEMORY_EXIT or _out_of_memory(self._stderr):
            raise TooLarge(
                f"reading and planning this snapshot needs more than the {memory_limit():,} bytes "
                f"a snapshot may take in memory ({MEMORY_ENV})"
            )
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode(errors="replace")
        raise RuntimeError(f"the snapshot worker ended with {self.process.returncode}: {tail}")

    def _write(self, message) -> None:
        try:
            self.process.stdin.write(json.dumps(message, separators=(",", ":")) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it ended already: its exit code says why

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self._stderr):
            stream.close()
        self._remove()
        if self._held:
            self._held = False
            _ONE_AT_A_TIME.release()

    def _remove(self) -> None:
        if self.owned:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _out_of_memory(stderr) -> bool:
    stderr.seek(0)
    return b"MemoryError" in stderr.read()[-4000:]
