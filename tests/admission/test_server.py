"""The production server as a real process over real TLS: the API server's view of the webhook.

Runs with DATABASE_URL and REDIS_URL pointed at closed ports: admission must not need either.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import time

import pytest

from admission import certs
from tests.admission.serving import (
    HOSTNAME,
    NAMESPACE,
    SERVICE,
    read_until_closed,
    start_server,
    stop_server,
    tls_context,
)
from tests.admission.support import load_pod, review_bytes

READ_TIMEOUT = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("certs")
    certs.ensure_certificates(directory, SERVICE, NAMESPACE)
    # A short read timeout, for the trickling-body test; every other request arrives at once.
    handle = start_server(directory, "--read-timeout", str(READ_TIMEOUT))
    yield handle
    stop_server(handle)


def test_mutates_over_tls_with_database_and_redis_down(server):
    status, body = server.post(
        "/admission/mutate?timeout=3s", review_bytes(load_pod("job-parallel.yaml"), uid="u-1")
    )
    assert status == 200
    response = body["response"]
    assert response["uid"] == "u-1" and response["allowed"] is True
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": "resnet-train"}}
    ]


def test_validates_over_tls_with_database_and_redis_down(server):
    pod = load_pod("lws-worker.yaml")
    pod["metadata"]["annotations"]["gangweb.io/min-count"] = "7"
    status, body = server.post("/admission/validate", review_bytes(pod))
    assert status == 200 and body["response"]["allowed"] is False


def test_keep_alive_serves_many_reviews_on_one_connection(server):
    connection = server.connection()
    uids = [f"keep-{n}" for n in range(20)]
    answered = [
        server.post("/admission/mutate", review_bytes(load_pod("kueue-podgroup.yaml"), uid=uid), connection)[
            1
        ]["response"]["uid"]
        for uid in uids
    ]
    assert answered == uids


def test_concurrent_reviews_each_get_their_own_answer(server):
    # Requests arriving in one event-loop turn are decided together (TurnBatch): answers must not mix.
    from concurrent.futures import ThreadPoolExecutor

    fixtures = {"job-parallel.yaml": "resnet-train", "kueue-podgroup.yaml": None, "lws-worker.yaml": None}
    expected = {}
    for fixture in fixtures:
        _status, body = server.post(
            "/admission/mutate", review_bytes(load_pod(fixture), uid=f"ref-{fixture}")
        )
        expected[fixture] = body["response"].get("patch")
    assert expected["job-parallel.yaml"] is not None

    def burst(worker: int) -> list[tuple[str, str | None, str | None]]:
        connection = server.connection()
        seen = []
        for n in range(15):
            fixture = list(fixtures)[(worker + n) % len(fixtures)]
            uid = f"c{worker}-{n}"
            _, body = server.post("/admission/mutate", review_bytes(load_pod(fixture), uid=uid), connection)
            seen.append((uid, body["response"]["uid"], body["response"].get("patch") == expected[fixture]))
        return seen

    with ThreadPoolExecutor(16) as pool:
        results = [item for seen in pool.map(burst, range(16)) for item in seen]
    assert len(results) == 240
    assert all(sent == answered and same_patch for sent, answered, same_patch in results)


def test_turn_batch_decides_a_turn_together_and_isolates_failures():
    import asyncio

    from admission.handler import Answer
    from admission.server import TurnBatch

    decided = []

    def decide(body: bytes) -> Answer:
        decided.append(body)
        if body == b"bug":
            raise RuntimeError("a bug in a rule")
        return Answer(200, body.upper())

    async def scenario():
        batch = TurnBatch()
        first, broken, cancelled, last = (batch.submit(decide, body) for body in (b"a", b"bug", b"c", b"d"))
        cancelled.cancel()
        assert decided == []  # nothing is decided before the turn's tasks have all submitted
        results = await asyncio.gather(first, broken, last, return_exceptions=True)
        return results

    first, broken, last = asyncio.run(scenario())
    assert (first.body, last.body) == (b"A", b"D")
    assert isinstance(broken, RuntimeError)
    assert decided == [b"a", b"bug", b"d"]  # the cancelled request was not decided


def test_undeliverable_decisions_are_dropped_and_counted(server):
    server.post("/admission/mutate", review_bytes(load_pod("job-indexed.yaml")))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for _ in range(4):  # two workers: ask a few times to reach the one that dropped
            connection = server.connection()
            connection.request("GET", "/metrics")
            text = connection.getresponse().read().decode()
            if (
                'gangweb_admission_events_dropped_total{reason="publish_failed"}' in text
                and 'gangweb_admission_events_dropped_total{reason="publish_failed"} 0.0' not in text
            ):
                return
        server.post("/admission/mutate", review_bytes(load_pod("job-indexed.yaml")))
        time.sleep(0.5)
    pytest.fail("no dropped decision was counted")


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{", 400),
        (b"", 400),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', 400),
        (b"\xff\xfe", 400),
    ],
)
def test_bad_bodies_get_json_errors_over_tls(server, body, status):
    got, payload = server.post("/admission/mutate", body)
    assert (got, payload["kind"], payload["code"]) == (status, "Status", status)


def test_declared_oversized_body_gets_413_without_being_read(server):
    context = tls_context(server.ca())
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", server.port)), server_hostname=HOSTNAME
    ) as tls:
        tls.sendall(
            b"POST /admission/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 9000000\r\n\r\n"
        )
        head = tls.recv(4096)
    assert head.startswith(b"HTTP/1.1 413")


def test_wrong_method_path_and_content_type(server):
    connection = server.connection()
    connection.request("GET", "/admission/mutate")
    response = connection.getresponse()
    assert response.status == 405 and json.loads(response.read())["code"] == 405
    assert server.post("/admission/nope", b"{}")[0] == 404
    status, payload = server.post("/admission/mutate", b"{}", headers={"Content-Type": "text/plain"})
    assert status == 400 and "Content-Type" in payload["message"]


def test_certificate_is_checked_for_the_service_name(server):
    with pytest.raises(ssl.SSLCertVerificationError):
        server.connection(hostname="gangweb-webhook.elsewhere.svc")


def reloads(server) -> int:
    """The "reloaded serving certificate" records in the server's log: one per worker and renewal."""
    return (server.directory / "server.log").read_text(errors="replace").count("reloaded serving certificate")


def test_renewed_certificate_is_served_without_a_restart(server):
    old_ca = server.ca()
    pid = server.process.pid
    before = reloads(server)
    renewed = certs.ensure_certificates(server.directory, SERVICE, NAMESPACE, force=True)
    new_ca = renewed.ca.cert_pem()
    # Each worker reloads at a handshake once its once-a-second file check comes round, and says so: new
    # connections go on until both workers have (the workers share the port, so which one answers is luck).
    deadline = time.monotonic() + 30
    while reloads(server) < before + 2:
        with contextlib.suppress(ssl.SSLError):
            server.connection(new_ca).close()
        assert time.monotonic() < deadline, "a worker never reloaded its certificate"
    status, _ = server.post(
        "/admission/mutate", review_bytes(load_pod("job-parallel.yaml")), server.connection(new_ca)
    )
    assert status == 200
    for _ in range(4):  # whichever worker answers, the old CA verifies it no more
        with pytest.raises(ssl.SSLCertVerificationError):
            server.connection(old_ca).close()
    assert server.process.poll() is None and server.process.pid == pid


def test_chunked_request_body_is_read_whole(server):
    connection = server.connection()
    body = review_bytes(load_pod("lws-leader.yaml"), uid="chunked")
    chunks = iter([body[:100], body[100:1000], body[1000:]])
    connection.request(
        "POST",
        "/admission/mutate",
        body=chunks,
        encode_chunked=True,
        headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
    )
    response = connection.getresponse()
    payload = json.loads(response.read())
    assert (
        response.status == 200 and payload["response"]["uid"] == "chunked" and "patch" in payload["response"]
    )


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(
            b"POST /admission/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{",
            id="1 of 100 body bytes",
        ),
        pytest.param(b"POST /admission/mutate HTTP/1.1\r\nHost: x\r\nContent-Ty", id="half the headers"),
    ],
)
def test_a_request_that_trickles_in_is_cut_off_after_the_read_timeout(server, sent):
    context = tls_context(server.ca())
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", server.port)), server_hostname=HOSTNAME
    ) as tls:
        tls.sendall(sent)
        received = read_until_closed(tls)
    assert received.startswith(b"HTTP/1.1 408 ")
    body = json.loads(received.split(b"\r\n\r\n", 1)[1])
    assert (body["kind"], body["code"]) == ("Status", 408)
    assert f"within {READ_TIMEOUT} s" in body["message"]
    # The server is fine afterwards.
    assert server.post("/admission/mutate", review_bytes(load_pod("job-parallel.yaml")))[0] == 200


def test_a_slow_client_is_cut_off_while_others_are_answered(server):
    context = tls_context(server.ca())
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", server.port)), server_hostname=HOSTNAME
    ) as tls:
        tls.sendall(
            b"POST /admission/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        connection = server.connection()
        for n in range(5):
            status, body = server.post(
                "/admission/mutate", review_bytes(load_pod("job-parallel.yaml"), uid=f"k-{n}"), connection
            )
            assert status == 200 and body["response"]["uid"] == f"k-{n}"
        assert read_until_closed(tls).startswith(b"HTTP/1.1 408 ")


def client_hello(ca_pem: bytes) -> bytes:
    """The ClientHello a verifying client sends first, as bytes (nothing is connected)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = tls_context(ca_pem).wrap_bio(incoming, outgoing, server_hostname=HOSTNAME)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def wait_for_close(sock: socket.socket, deadline: float) -> bool:
    """True once the server closed ``sock`` (EOF or reset); False if it is still open at ``deadline``."""
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(4096):
                return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
    return False


def test_connections_that_never_finish_the_tls_handshake_are_cut_after_the_read_timeout(server):
    # Half send nothing after connecting, half stop in the middle of their ClientHello.
    hello = client_hello(server.ca())
    opened = time.monotonic()
    stalled = []
    for n in range(100):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        if n % 2:
            sock.sendall(hello[: len(hello) // 2])
        stalled.append(sock)
    try:
        # While they hang, a real client is answered.
        status, body = server.post(
            "/admission/mutate", review_bytes(load_pod("job-parallel.yaml"), uid="meanwhile")
        )
        assert status == 200 and body["response"]["uid"] == "meanwhile"
        # The loop's default would keep them 60 s; the bound leaves room for a loaded machine.
        deadline = opened + READ_TIMEOUT + 20
        still_open = [n for n, sock in enumerate(stalled) if not wait_for_close(sock, deadline)]
    finally:
        for sock in stalled:
            sock.close()
    assert not still_open, (
        f"{len(still_open)} of 100 connections still open {READ_TIMEOUT + 20} s after opening"
    )
    assert server.post("/admission/mutate", review_bytes(load_pod("job-parallel.yaml")))[0] == 200
