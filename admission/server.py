"""The production webhook server: HTTPS, keep-alive, its own process(es), no Django request machinery.

kube-apiserver calls the webhook for every pod write, so the request path is kept short: uvicorn
(httptools + uvloop) hands the body to a tiny ASGI app, which decides the requests of each event-loop
turn together (``TurnBatch``) through ``admission.handler.Webhook``; no middleware, no ORM, no
database or Redis. The Django views answer the same paths with the same handler, for the dashboard
process and tests.

Certificates are reloaded without a restart (``admission/tlsreload.py``).

With a client CA (``--client-ca``), the webhook paths answer only connections that presented a
certificate signed by it (and, with ``--client-name``, naming one of those names): kube-apiserver, set
up to present one (docs/admission.md, "Who may call the webhook"). Probes and ``/metrics`` stay open to
clients without a certificate. Every request must arrive whole within the read timeout
(``admission.protocol``), and every TLS handshake must finish within it (``_server``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from admission import metrics
from admission.handler import MUTATE, VALIDATE, Answer, Webhook
from admission.protocol import CLIENT, protocol_class
from admission.review import ReviewError, build_response, parse_review
from admission.tlsreload import CertificateReloader
from admission.webhookconfig import MUTATE_PATH, VALIDATE_PATH

logger = logging.getLogger(__name__)

ECHO_PATH = "/bench/echo"
# Benchmark reference: parse the review and allow it, no rules. Splits the webhook's cost into the
# envelope (JSON parsing) and gangweb's own rules.
ALLOW_PATH = "/bench/allow"
# Longer than kube-apiserver's idle keep-alive (90 s, Go's default transport): the server must not
# close a connection the client is about to reuse, or a POST fails with "connection reset".
KEEP_ALIVE_SECONDS = 120
GRACEFUL_SHUTDOWN_SECONDS = 5
# A request's headers and body must arrive within this many seconds of its first byte, and a TLS
# handshake must finish within as many of the connection's opening. kube-apiserver sends a review at
# once and gives up on the answer after timeoutSeconds (3 and 5 s here).
READ_TIMEOUT_SECONDS = 5.0


def _json(status: int, payload: dict[str, Any]) -> tuple[int, bytes]:
    return status, json.dumps(payload).encode()


Decide = Callable[[bytes], Answer]


class TurnBatch:
    """Decides the reviews that arrived in one event-loop turn one after another, then answers them.

    Under load many connections deliver a request in the same turn of the loop. Deciding each inside
    its own task interleaves the webhook's Python code with TLS, HTTP parsing and socket writes, which
    evict it from the CPU caches every time; deciding the turn's requests back to back runs it hot, at
    close to its tight-loop cost (docs/admission.md, "Benchmark": +0.1 of echo's throughput). A request
    waits at most for the others of its turn, tens of microseconds each.
    """

    def __init__(self) -> None:
        self._waiting: list[tuple[Decide, bytes, asyncio.Future]] = []

    def submit(self, decide: Decide, body: bytes) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        if not self._waiting:
            # Runs after the tasks already scheduled in this turn have submitted theirs.
            loop.call_soon(self._decide_all)
        self._waiting.append((decide, body, answer))
        return answer

    def _decide_all(self) -> None:
        waiting, self._waiting = self._waiting, []
        for decide, body, answer in waiting:
            if answer.done():  # its task was cancelled (shutdown)
                continue
            try:
                answer.set_result(decide(body))
            except Exception as error:  # decide answers every bad input itself: this is a bug
                logger.exception("webhook request failed", extra={"decide": repr(decide)})
                answer.set_exception(error)


class WebhookApp:
    """ASGI app: the two webhook paths, probes, metrics, and (for the benchmark only) an echo path.

    ``ready``: whether ``/readyz`` says ready (the PodGroup view is listed); ``require_client``: the
    webhook paths answer only connections whose client certificate ``admission.protocol`` accepted.
    """

    def __init__(
        self,
        webhook: Webhook,
        echo: bool = False,
        ready: Callable[[], bool] | None = None,
        require_client: bool = False,
    ) -> None:
        self.webhook = webhook
        self.ready = ready
        self.require_client = require_client
        self.batch = TurnBatch()
        # Path -> what decides its reviews (partial: no Python frame of its own per request).
        self.routes: dict[str, Decide | None] = {
            MUTATE_PATH: partial(webhook.handle, MUTATE),
            VALIDATE_PATH: partial(webhook.handle, VALIDATE),
        }
        if echo:
            self.routes[ECHO_PATH] = None  # answered with the body itself, outside the batch
            self.routes[ALLOW_PATH] = _allow

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        answered = await self._answer(scope, receive)
        if answered is None:  # the client went away (or was cut off by the read timeout)
            return
        status, body, content_type = answered
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _answer(self, scope: dict, receive: Callable) -> tuple[int, bytes, bytes] | None:
        path, method = scope["path"], scope["method"]
        if path in ("/healthz", "/readyz") and method in ("GET", "HEAD"):
            if path == "/readyz" and self.ready is not None and not self.ready():
                return (
                    *_json(503, {"status": "not ready", "reason": "PodGroups not listed from the API yet"}),
                    b"application/json",
                )
            return (*_json(200, {"status": "ok"}), b"application/json")
        if path == "/metrics" and method == "GET":
            return 200, generate_latest(metrics.REGISTRY), CONTENT_TYPE_LATEST.encode()
        if path not in self.routes:
            return (
                *_json(404, {"kind": "Status", "code": 404, "message": f"no webhook at {path}"}),
                b"application/json",
            )
        if self.require_client and not scope.get(CLIENT):
            return (
                *_json(
                    403,
                    {
                        "kind": "Status",
                        "code": 403,
                        "reason": "Forbidden",
                        "message": "this webhook answers kube-apiserver only: present a client certificate "
                        "signed by the configured client CA",
                    },
                ),
                b"application/json",
            )
        if method != "POST":
            return (*_json(405, {"kind": "Status", "code": 405, "message": "use POST"}), b"application/json")
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length", b"")
        rejected = self.webhook.precheck(
            headers.get(b"content-type", b"").decode("latin-1"), int(declared) if declared.isdigit() else None
        )
        if rejected is not None:
            return rejected.status, rejected.body, b"application/json"
        chunks, size, limit = [], 0, self.webhook.max_body_bytes
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                answer = self.webhook.too_large()
                return answer.status, answer.body, b"application/json"
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        decide = self.routes[path]
        if decide is None:
            return 200, body, b"application/json"
        answer = await self.batch.submit(decide, body)
        return answer.status, answer.body, b"application/json"


def _allow(body: bytes) -> Answer:
    """The benchmark's reference route: parse the review and allow it, no rules."""
    try:
        return Answer(200, build_response(parse_review(body).uid))
    except ReviewError as error:
        return Answer(error.status, error.body())


def _config(
    app: WebhookApp,
    host: str,
    port: int,
    reloader: CertificateReloader,
    log_level: str,
    read_timeout: float = READ_TIMEOUT_SECONDS,
    client_names: frozenset[str] = frozenset(),
):
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        # httptools, with the read timeout and the client certificate check (admission.protocol).
        http=protocol_class(read_timeout, KEEP_ALIVE_SECONDS, client_names),
        loop="uvloop",
        lifespan="off",
        ssl_context_factory=lambda config, default: reloader.context,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        # Idle TLS peers may never answer close_notify; do not let them hold a rolling restart.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        access_log=False,
        # kube-apiserver calls the webhook directly: there are no proxy headers to trust, and skipping
        # the middleware saves a coroutine frame on every request.
        proxy_headers=False,
        server_header=False,
        date_header=False,
        log_level=log_level,
    )


def _server(config, handshake_timeout: float):
    """A uvicorn server whose listeners end a TLS handshake not finished within ``handshake_timeout``.

    uvicorn creates its listeners without ``ssl_handshake_timeout``, so the loop's default (60 s) let a
    peer that opened a connection and sent nothing, or half a ClientHello, hold it for a minute.
    """
    import uvicorn

    class _BoundedServer(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            loop = asyncio.get_running_loop()
            loop.create_server = partial(loop.create_server, ssl_handshake_timeout=handshake_timeout)
            try:
                await super().startup(sockets)
            finally:
                del loop.create_server

    return _BoundedServer(config)


def serve(
    webhook: Webhook,
    *,
    host: str,
    port: int,
    certfile: Path,
    keyfile: Path,
    workers: int = 1,
    echo: bool = False,
    log_level: str = "warning",
    client_ca: Path | None = None,
    client_names: frozenset[str] = frozenset(),
    read_timeout: float = READ_TIMEOUT_SECONDS,
    on_start: Callable[[], None] | None = None,
    ready: Callable[[], bool] | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT. With ``workers`` > 1, forked processes share one listening socket.

    ``on_start`` runs in every serving process before it serves (the PodGroup watch: threads do not
    survive a fork); ``ready`` answers ``/readyz``. ``client_ca``/``client_names``: see the module doc;
    ``read_timeout`` bounds each request's arrival and each TLS handshake."""
    # Everything imported so far lives as long as the process: move it out of the collector's sight, and
    # collect the young generation less often, so a full collection never scans Django and friends
    # while a request waits (p99 latency).
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)
    reloader = CertificateReloader(certfile, keyfile, client_ca=client_ca)
    app = WebhookApp(webhook, echo=echo, ready=ready, require_client=client_ca is not None)
    config = _config(app, host, port, reloader, log_level, read_timeout, client_names)
    if workers <= 1:
        if on_start is not None:
            on_start()
        _server(config, read_timeout).run()
        return
    sock = config.bind_socket()
    children: dict[int, int] = {}

    def start(slot: int) -> None:
        pid = os.fork()
        if pid == 0:
            try:
                for signum in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(signum, signal.SIG_DFL)
                if on_start is not None:
                    on_start()
                _server(config, read_timeout).run(sockets=[sock])
            finally:
                os._exit(0)
        children[pid] = slot

    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for slot in range(workers):
        start(slot)
    while children:
        try:
            pid, _status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        slot = children.pop(pid, None)
        if slot is not None and not stopping:
            logger.error("webhook worker exited; starting a new one", extra={"pid": pid})
            start(slot)
    sock.close()
