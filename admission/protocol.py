"""The webhook port's HTTP protocol: uvicorn's httptools protocol with a read timeout and the client's
certificate checked once per connection.

**Read timeout.** A request must arrive whole, headers and body, within ``read_timeout`` seconds of its
first byte; otherwise the server answers 408 (when no other answer is being written on the connection)
and closes it. uvicorn has no such timeout: a client that declared 100 bytes and sent 1 held its
connection and a task for as long as it liked (docs/measurements.md). A connection that sends no request
at all is closed after ``idle_timeout`` seconds, as uvicorn closes one idle between requests.

**Client certificate.** With a client CA the TLS layer asks every client for a certificate and verifies
the one offered (``ssl.CERT_OPTIONAL``: probes and metrics scrapers offer none and still connect). What
it found is put in each request's scope as ``scope["gangweb.client"]``: True when the connection
presented a certificate that verified and (when ``client_names`` is set) names one of them as its
CommonName or a DNS SubjectAlternativeName. ``WebhookApp`` requires it on the webhook paths.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

CLIENT = "gangweb.client"
# WebhookProtocol extends uvicorn's private httptools protocol (its callbacks and the attributes loop,
# transport, scope, cycle, pipeline; the cycle's response_started, response_complete, disconnected,
# message_event): pinned to these releases in pyproject.toml and checked by
# tests/admission/test_protocol_internals.py, which fails when another release is installed.
TESTED_WITH = {"uvicorn": "0.54.0", "httptools": "0.9.0"}

_STATUS = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "reason": "Timeout", "code": 408}


def _timeout_response(read_timeout: float) -> bytes:
    body = orjson.dumps({**_STATUS, "message": f"the request did not arrive whole within {read_timeout:g} s"})
    return b"".join(
        (
            b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: ",
            str(len(body)).encode(),
            b"\r\nconnection: close\r\n\r\n",
            body,
        )
    )


def certificate_names(peercert: dict[str, Any] | None) -> set[str]:
    """The subject CommonNames and DNS SubjectAlternativeNames of a verified peer certificate
    (``SSLSocket.getpeercert()``); empty without one."""
    if not peercert:
        return set()
    names = {value for rdn in peercert.get("subject", ()) for key, value in rdn if key == "commonName"}
    names.update(value for kind, value in peercert.get("subjectAltName", ()) if kind == "DNS")
    return names


def client_allowed(peercert: dict[str, Any] | None, client_names: frozenset[str]) -> bool:
    """A verified certificate was presented and, if names are required, carries one of them."""
    if not peercert:
        return False
    return not client_names or bool(certificate_names(peercert) & client_names)


class WebhookProtocol(HttpToolsProtocol):
    """Configured by ``protocol_class``; one instance per connection."""

    read_timeout = 5.0
    idle_timeout = 120.0
    client_names: frozenset[str] = frozenset()
    _timeout_answer = _timeout_response(5.0)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.client_ok = client_allowed(transport.get_extra_info("peercert"), self.client_names)
        self._headers_done = False
        self._deadline: asyncio.TimerHandle | None = self.loop.call_later(
            self.idle_timeout, self._idle_too_long
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope[CLIENT] = self.client_ok  # type: ignore[literal-required]
        self._headers_done = False
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout, self._read_too_long)

    def on_headers_complete(self) -> None:
        self._headers_done = True  # from here on self.cycle is this request's
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def _idle_too_long(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def _read_too_long(self) -> None:
        self._deadline = None
        transport = self.transport
        if transport.is_closing():
            return
        cycle = self.cycle
        # Answer 408 only when no other answer is being written on this connection: before the headers
        # are in, self.cycle is the previous request's; after, this one's (queued behind another when
        # pipelined), which may have been answered early (413) while its body was still coming.
        if self._headers_done:
            if not self.pipeline and not cycle.response_started:
                transport.write(self._timeout_answer)
            if not cycle.response_complete:
                # The app waiting for the rest of the body hears "disconnected" and answers nothing.
                cycle.disconnected = True
                cycle.message_event.set()
        elif cycle is None or cycle.response_complete:
            transport.write(self._timeout_answer)
        transport.close()


def protocol_class(
    read_timeout: float, idle_timeout: float, client_names: frozenset[str] = frozenset()
) -> type:
    """A ``WebhookProtocol`` with these settings, for ``uvicorn.Config(http=...)``."""
    return type(
        "WebhookProtocol",
        (WebhookProtocol,),
        {
            "read_timeout": read_timeout,
            "idle_timeout": idle_timeout,
            "client_names": frozenset(client_names),
            "_timeout_answer": _timeout_response(read_timeout),
        },
    )
