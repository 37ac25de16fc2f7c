"""Fault injection for the test server: make chosen requests fail or stall, drop watch streams."""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass, field

from .errors import ApiError

REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass
class Fault:
    """Answer requests whose method matches and whose path matches ``path`` (a regex, searched).

    ``code`` 0 means do not fail, only wait ``delay`` seconds first. ``times`` None means forever.
    """

    path: str
    code: int = 500
    method: str | None = None
    times: int | None = 1
    message: str = ""
    delay: float = 0.0
    hits: int = field(default=0)
    finished: int = field(default=0)

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method.upper() == method) and re.search(
            self.path, path
        ) is not None

    def error(self) -> ApiError:
        reason = REASONS.get(self.code, "InternalError")
        return ApiError(
            self.code,
            reason,
            self.message or f"injected fault: {reason}",
            retry_after=1 if self.code == 429 else None,
        )


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []
        # Watch streams opened under an older generation are cut (see drop_watches).
        self.watch_generation = 0

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._rules.append(fault)
        return fault

    def fail(
        self,
        path: str,
        code: int = 500,
        *,
        method: str | None = None,
        times: int | None = 1,
        message: str = "",
        delay: float = 0.0,
    ) -> Fault:
        return self.add(Fault(path=path, code=code, method=method, times=times, message=message, delay=delay))

    def fail_eviction(
        self,
        namespace: str,
        name: str,
        code: int = 500,
        *,
        times: int | None = 1,
        message: str = "",
        delay: float = 0.0,
    ) -> Fault:
        path = f"^/api/v1/namespaces/{re.escape(namespace)}/pods/{re.escape(name)}/eviction$"
        return self.fail(path, code, method="POST", times=times, message=message, delay=delay)

    def drop_watches(self) -> None:
        """Cut every open watch stream abruptly (no terminating chunk), as a lost connection would."""
        with self._lock:
            self.watch_generation += 1

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def take(self, method: str, path: str) -> Fault | None:
        """The first live rule for this request, with one use spent."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(method, path) and (rule.times is None or rule.hits < rule.times):
                    rule.hits += 1
                    return rule
        return None

    def finish(self, rule: Fault) -> None:
        """One request this rule took has been answered: tests wait on it instead of sleeping."""
        with self._lock:
            rule.finished += 1

    def snapshot(self) -> list[dict]:
        with self._lock:
            return [asdict(r) for r in self._rules]
