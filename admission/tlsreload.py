"""The webhook server's TLS context, reloaded without a restart.

The context given to uvicorn carries an SNI callback that, at each new handshake, checks (at most once a
second) whether the certificate, key or client CA file changed and, if so, hands the connection a context
loaded from the new files. A failed reload (e.g. key and certificate caught mid-rotation) keeps the
previous context and retries later.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger("admission.server")


class CertificateReloader:
    def __init__(
        self,
        certfile: Path,
        keyfile: Path,
        check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        client_ca: Path | None = None,
    ) -> None:
        self.certfile, self.keyfile = Path(certfile), Path(keyfile)
        self.client_ca = Path(client_ca) if client_ca is not None else None
        self.check_interval = check_interval
        self.clock = clock
        self._lock = threading.Lock()
        self._stamp = self._file_stamp()
        self._checked_at = clock()
        self._current = self._load()
        self._current.sni_callback = self._on_handshake
        self.reloads = 0

    def _file_stamp(self) -> tuple:
        stamps = []
        for path in (self.certfile, self.keyfile, *((self.client_ca,) if self.client_ca else ())):
            try:
                info = path.stat()
            except OSError:
                return ()
            stamps.append((info.st_ino, info.st_mtime_ns, info.st_size))
        return tuple(stamps)

    def _load(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.certfile, self.keyfile)
        if self.client_ca is not None:
            # Optional at the TLS layer (probes offer no certificate); required by the app on the webhook
            # paths. A certificate that is offered must verify, or the handshake fails.
            context.verify_mode = ssl.CERT_OPTIONAL
            context.load_verify_locations(cafile=self.client_ca)
        # HTTP/1.1 only: a Go client that is offered h2 would take it, and this server does not speak it.
        context.set_alpn_protocols(["http/1.1"])
        return context

    @property
    def context(self) -> ssl.SSLContext:
        """The context uvicorn listens with; handshakes are moved to the newest one from here."""
        return self._current

    def current(self) -> ssl.SSLContext:
        now = self.clock()
        if now - self._checked_at < self.check_interval:
            return self._current
        with self._lock:
            self._checked_at = now
            stamp = self._file_stamp()
            if stamp and stamp != self._stamp:
                try:
                    fresh = self._load()
                except (OSError, ssl.SSLError, ValueError):
                    logger.warning(
                        "new certificate files not loadable yet; keeping the previous ones", exc_info=True
                    )
                else:
                    fresh.sni_callback = self._on_handshake
                    self._current, self._stamp = fresh, stamp
                    self.reloads += 1
                    logger.info("reloaded serving certificate", extra={"certfile": str(self.certfile)})
            return self._current

    def _on_handshake(self, connection: Any, server_name: str | None, context: ssl.SSLContext) -> None:
        newest = self.current()
        if newest is not context:
            connection.context = newest
