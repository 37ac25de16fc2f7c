"""Real local HTTP sinks for the notification tests: each a threaded HTTP server on its own port that
answers as told (ok, slow, 500 a number of times, a redirect) and keeps what it received."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Sink:
    def __init__(
        self,
        *,
        answer: str = "ok",
        failures: int = 0,
        delay: float = 0.0,
        slow_calls: int | None = None,
        port: int = 0,
    ):
        """``failures``: the first calls answer 500; ``delay``: seconds before answering, for the first
        ``slow_calls`` calls (every call when None). A body that gets a 2xx is kept before the answer is
        written, so one whose answer came too late for gangweb is kept too (a duplicate to come)."""
        self.answer, self.failures, self.delay, self.slow_calls = answer, failures, delay, slow_calls
        self.received: list[dict] = []  # {"path", "headers", "body", "at"}
        self.calls = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with sink._lock:
                    sink.calls += 1
                    failing = sink.calls <= sink.failures
                    slow = sink.slow_calls is None or sink.calls <= sink.slow_calls
                if sink.delay and slow:
                    time.sleep(sink.delay)
                if sink.answer == "redirect":
                    self.send_response(307)
                    self.send_header("Location", "http://elsewhere.example/hook")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if failing or sink.answer == "500":
                    body = b"sink is broken"
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                with sink._arrived:
                    sink.received.append(
                        {
                            "path": self.path,
                            "headers": dict(self.headers),
                            "body": json.loads(raw),
                            "at": time.time(),
                        }
                    )
                    sink._arrived.notify_all()
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int, timeout: float = 30.0) -> list[dict]:
        """What arrived once ``count`` bodies did; AssertionError when they do not in time."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.received) >= count, timeout=timeout):
                raise AssertionError(f"{len(self.received)} of {count} notifications arrived in {timeout} s")
            return list(self.received)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
