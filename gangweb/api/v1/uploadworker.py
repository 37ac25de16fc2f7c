"""The snapshot worker: reads an uploaded snapshot and plans on it in a process of its own, under a memory
limit, so that an upload's objects never live in the web process (``gangweb/api/v1/uploads.py`` starts it).

Parsed, a snapshot takes many times its size in bytes (tiny JSON objects thirty times and more), and the
parsers hold the interpreter lock while they build it. Here the address space is capped
(``RLIMIT_AS`` at ``GANGWEB_SNAPSHOT_MEMORY_BYTES``): a snapshot that needs more ends this process with
``MEMORY_EXIT``, which the web process answers with a 413, and the web process keeps serving meanwhile.

Run as ``python -m gangweb.api.v1.uploadworker LIMIT_BYTES``. It speaks JSON lines: the job on standard
input (``job`` simulate or podgroups, ``path`` of the body or the file, ``body`` "json" (a whole JSON
request body) or "file" (a snapshot file), ``fields`` the request's validated fields, ``scope``). For a
JSON body it first writes the body's other fields (``{"fields", "snapshot": bool}``) and waits for the
web process's validated fields (``null``: stop). Its last line is the answer: ``{"status": 200, "data"}``
or ``{"status": 400, "errors" | "detail"}``. Without Django: only the engine and the query functions.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

from gangweb.access.scope import Scope
from gangweb.clusterview import whatif
from scheduler.engine import SnapshotError, read_snapshot

MEMORY_EXIT = 3


def answer(job: dict[str, Any], lines_in, lines_out) -> dict[str, Any] | None:
    """The answer to ``job``; None when the web process stopped it after reading the fields."""
    fields = job.get("fields")
    with open(job["path"], "rb") as stream:
        if job["body"] == "json":
            try:
                document = json.load(stream)
            except RecursionError:
                return {"status": 400, "detail": "JSON parse error - the body nests too deeply"}
            except ValueError as exc:
                return {"status": 400, "detail": f"JSON parse error - {exc}"}
            if not isinstance(document, dict):
                return {"status": 400, "detail": "the body is not a JSON object"}
            snapshot = document.pop("snapshot", None)
            _send(lines_out, {"fields": document, "snapshot": snapshot is not None})
            fields = json.loads(lines_in.readline() or "null")
            if fields is None:
                return None
            if not isinstance(snapshot, dict | list):
                return {"status": 400, "errors": {"snapshot": ["a List object or a list of objects"]}}
            objects = [snapshot]
            del document, snapshot
        else:
            try:
                objects = read_snapshot(stream)
            except SnapshotError as exc:
                return {"status": 400, "errors": {"snapshot": [str(exc)]}}
    try:
        if job["job"] == "simulate":
            data: Any = whatif.plans(objects, fields["podGroup"], fields["policies"], maps=fields["maps"])
        else:
            scope = job["scope"]
            data = whatif.gangs(objects, Scope(scope["user"], scope["everywhere"], scope["perNamespace"]))
    except whatif.Refused as exc:
        if exc.missing:
            return {"status": 404, "detail": str(exc)}
        return {"status": 400, "errors": {exc.field: [str(exc)]}}
    except RecursionError:
        return {"status": 400, "errors": {"snapshot": ["nests lists or objects too deeply"]}}
    return {"status": 200, "data": data}


def _send(lines_out, message: dict[str, Any]) -> None:
    lines_out.write(json.dumps(message, separators=(",", ":")) + "\n")
    lines_out.flush()


def main() -> None:
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        result = answer(json.loads(sys.stdin.readline()), sys.stdin, sys.stdout)
        if result is not None:
            _send(sys.stdout, result)
    except MemoryError:
        os._exit(MEMORY_EXIT)


if __name__ == "__main__":
    main()
