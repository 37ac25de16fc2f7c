"""Snapshot uploads through the real web server (uvicorn, as deployed): an upload at the largest size
leaves the server process small and other readers served; a refused upload is answered before its body
is sent; every refusal is problem+json."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import migrate_and_run
from tests.gangweb.conftest import EMBEDDED_DEFAULTS

MIB = 2**20
MAX_BYTES = 48 * MIB
SERVER = {
    **EMBEDDED_DEFAULTS,
    "GANGWEB_SIM_NODES": "16",
    "GANGWEB_SIM_TICK_SECONDS": "0",
    "GANGWEB_SNAPSHOT_MAX_BYTES": str(MAX_BYTES),
}
BOUNDARY = "gangweb-upload-test"


def readers(tmp_path: Path) -> dict[str, str]:
    """Two viewers of team-a in the server's own database (the embedded one under ``tmp_path``), each
    with a token: the uploader and another user reading the API meanwhile."""
    script = (
        "import io; from django.core.management import call_command\n"
        "for user in ('uploader', 'other'):\n"
        "    call_command('access', 'grant', user, '--role', 'viewer', '--namespaces', 'team-a', stdout=io.StringIO())\n"
        "    out = io.StringIO(); call_command('access', 'token', user, stdout=out); print(user, out.getvalue().strip())\n"
    )
    env = {**os.environ, **SERVER, "GANGWEB_VAR_DIR": str(tmp_path)}
    done = migrate_and_run(env, script, timeout=300)
    printed = [line.split() for line in done.stdout.splitlines()]
    return {
        words[0]: f"Bearer {words[1]}" for words in printed if len(words) == 2 and words[1].startswith("gwt_")
    }


def tiny_objects_upload(path: Path, size: int) -> Path:
    """A multipart body of exactly ``size`` bytes: a gang's name and a JSON file of tiny objects, the
    most objects per byte a snapshot can hold."""
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="podGroup"\r\n\r\nteam-a/train\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="snapshot"; filename="dump.json"\r\n'
        "Content-Type: application/json\r\n\r\n"
        '{"kind":"List","items":['
    ).encode()
    tail = f'{{"a":0}}]}}\r\n--{BOUNDARY}--\r\n'.encode()
    item = b'{"a":0},'
    count, rest = divmod(size - len(head) - len(tail), len(item))
    with path.open("wb") as out:
        out.write(head)
        for _ in range(count // 10_000):
            out.write(item * 10_000)
        out.write(item * (count % 10_000) + b" " * rest + tail)
    assert path.stat().st_size == size
    return path


def memory_mib(pid: int, field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (peak) of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


def test_an_upload_at_the_largest_size_leaves_the_server_small_and_others_served(asgi_server, tmp_path):
    tokens = readers(tmp_path)
    address = asgi_server(env={**SERVER, "GANGWEB_SNAPSHOT_MEMORY_BYTES": str(320 * MIB)})
    pid = asgi_server.processes[address].pid
    body = tiny_objects_upload(tmp_path / "upload", MAX_BYTES)
    base = f"http://{address}"
    other = {"Authorization": tokens["other"]}
    for _ in range(5):
        assert httpx.get(f"{base}/api/v1/nodes/", headers=other, timeout=60).status_code == 200
    before = max(memory_mib(pid, "VmRSS"), memory_mib(pid, "VmHWM"))

    answered: dict = {}

    def upload():
        with body.open("rb") as content:
            answered["response"] = httpx.post(
                f"{base}/api/v1/simulate/",
                content=content,
                headers={
                    "Authorization": tokens["uploader"],
                    "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
                    "Content-Length": str(MAX_BYTES),
                },
                timeout=300,
            )

    uploading = threading.Thread(target=upload)
    uploading.start()
    waits = []
    while uploading.is_alive():
        started = time.monotonic()
        assert httpx.get(f"{base}/api/v1/nodes/", headers=other, timeout=60).status_code == 200
        waits.append(time.monotonic() - started)
    uploading.join()

    response = answered["response"]
    assert response.status_code == 413, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert "GANGWEB_SNAPSHOT_MEMORY_BYTES" in response.json()["detail"]
    # The objects were parsed in the worker, the body spooled to disk: the server grew by a fraction of
    # the body (it grew by many times the body when it parsed the upload itself).
    assert memory_mib(pid, "VmHWM") - before < MAX_BYTES / MIB / 2
    # Another user was answered all along, not after the upload.
    assert len(waits) >= 3 and max(waits) < 5.0, waits


def answer_before_the_body(address: str, path: str, declared: int, authorization: str | None) -> dict:
    """POST ``declared`` bytes' worth of headers and only the body's first line, then wait for the
    answer: a server that reads the body first never answers."""
    host, port = address.split(":")
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {declared}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        + (f"Authorization: {authorization}\r\n" if authorization else "")
        + "\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.encode() + f"--{BOUNDARY}\r\n".encode())
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
        headers, _, content = received.partition(b"\r\n\r\n")
        lines = headers.decode().split("\r\n")
        fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        while len(content) < int(fields["content-length"]):
            content += sock.recv(65536)
    assert fields["content-type"] == "application/problem+json", headers
    return {"status": int(lines[0].split()[1]), **json.loads(content)}


def test_a_refused_upload_is_answered_before_its_body_is_sent(asgi_server, tmp_path):
    tokens = readers(tmp_path)
    address = asgi_server(env={**SERVER, "GANGWEB_SIMULATE_RATE": "1/min"})

    anonymous = answer_before_the_body(address, "/api/v1/simulate/", MAX_BYTES, None)
    assert anonymous["status"] == 401
    too_large = answer_before_the_body(address, "/api/v1/simulate/", MAX_BYTES + 1, tokens["uploader"])
    assert too_large["status"] == 413 and "GANGWEB_SNAPSHOT_MAX_BYTES" in too_large["detail"]
    # The one call of the minute, then the upload is throttled: the same budget, on either path.
    spent = httpx.post(
        f"http://{address}/api/v1/simulate/podgroups/",
        json={},
        headers={"Authorization": tokens["uploader"]},
        timeout=60,
    )
    assert spent.status_code == 200, spent.text
    throttled = answer_before_the_body(address, "/api/v1/simulate/", MAX_BYTES, tokens["uploader"])
    assert throttled["status"] == 429
    empty = httpx.post(
        f"http://{address}/api/v1/simulate/podgroups/",
        headers={"Authorization": tokens["uploader"]},
        timeout=60,
    )
    assert empty.status_code == 429, "a call without a body is throttled as well"
    # Another user's budget is their own.
    other = httpx.post(
        f"http://{address}/api/v1/simulate/podgroups/",
        json={},
        headers={"Authorization": tokens["other"]},
        timeout=60,
    )
    assert other.status_code == 200, other.text


def test_an_empty_or_broken_multipart_body_is_a_problem_naming_it(asgi_server, tmp_path):
    """Whatever part refuses the body (the view's validation, DRF's parser, Django before any view), the
    answer is a problem+json 400 with a body that says what is wrong."""
    tokens = readers(tmp_path)
    address = asgi_server(env=SERVER)
    for content_type, body, host, said in [
        (f"multipart/form-data; boundary={BOUNDARY}", b"", None, "podGroup"),
        ("multipart/form-data", b"", None, "podGroup"),
        (f"multipart/form-data; boundary={BOUNDARY}", f"--{BOUNDARY}\r\nbroken".encode(), None, "podGroup"),
        ("multipart/form-data; boundary=", b"x", None, "boundary"),
        # refused by Django itself, before any view: a Host not in ALLOWED_HOSTS
        (f"multipart/form-data; boundary={BOUNDARY}", b"", "elsewhere.example", "cannot be read"),
    ]:
        headers = {"Authorization": tokens["uploader"], "Content-Type": content_type}
        if host:
            headers["Host"] = host
        answer = httpx.post(f"http://{address}/api/v1/simulate/", content=body, headers=headers, timeout=30)
        assert answer.status_code == 400, (content_type, body, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json"), answer.headers
        problem = answer.json()
        assert problem["status"] == 400 and said in problem["detail"], problem
        assert problem["instance"] == "/api/v1/simulate/", problem
