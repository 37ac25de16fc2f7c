"""admission/protocol.py subclasses uvicorn's private ``HttpToolsProtocol``: the releases it was written
against are the ones installed, and every private name it uses is still there. Either failing means the
subclass must be re-read against the new release before the pin in pyproject.toml moves (the behaviour
itself: tests/admission/test_server.py's read timeout and client certificate tests)."""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from uvicorn.protocols.http import httptools_impl

from admission.protocol import TESTED_WITH, WebhookProtocol

ROOT = Path(__file__).resolve().parents[2]

# The private names admission/protocol.py overrides or reads.
CALLBACKS = (
    "connection_made",
    "connection_lost",
    "on_message_begin",
    "on_headers_complete",
    "on_message_complete",
)
PROTOCOL_ATTRIBUTES = ("loop", "transport", "scope", "cycle", "pipeline")
CYCLE_ATTRIBUTES = ("response_started", "response_complete", "disconnected", "message_event")


def assigned(cls: type) -> set[str]:
    """The instance attributes ``cls``'s own code assigns (``self.name = ...`` or ``self.name: T = ...``)."""
    return set(re.findall(r"self\.(\w+)\s*(?::[^=\n]+)?=[^=]", inspect.getsource(cls)))


def test_the_installed_releases_are_the_ones_the_subclass_was_written_for():
    installed = {name: version(name) for name in TESTED_WITH}
    assert installed == TESTED_WITH, (
        f"admission/protocol.py was written against {TESTED_WITH}, {installed} is installed: re-read "
        "WebhookProtocol against uvicorn's httptools_impl.py, then move TESTED_WITH and the pins together"
    )
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {f"{name}=={release}" for name, release in TESTED_WITH.items()} <= set(pins)
    constraints = (ROOT / "constraints.txt").read_text().splitlines()
    assert {f"{name}=={release}" for name, release in TESTED_WITH.items()} <= set(constraints)


def test_every_private_name_the_subclass_uses_is_still_uvicorns():
    base = httptools_impl.HttpToolsProtocol
    assert WebhookProtocol.__mro__[1] is base
    for name in CALLBACKS:
        assert callable(getattr(base, name, None)), f"HttpToolsProtocol.{name} is gone"
        assert name in WebhookProtocol.__dict__, (
            f"WebhookProtocol no longer overrides {name}: update CALLBACKS"
        )
    missing = set(PROTOCOL_ATTRIBUTES) - assigned(base)
    assert not missing, f"HttpToolsProtocol no longer sets {sorted(missing)}"
    missing = set(CYCLE_ATTRIBUTES) - assigned(httptools_impl.RequestResponseCycle)
    assert not missing, f"RequestResponseCycle no longer sets {sorted(missing)}"
    # The cycle's message_event is what a waiting app's receive() wakes on.
    assert "message_event.wait()" in inspect.getsource(httptools_impl.RequestResponseCycle.receive)


def test_the_subclass_uses_no_private_name_this_test_does_not_check():
    used = set(re.findall(r"self\.(\w+)", inspect.getsource(WebhookProtocol)))
    used |= set(re.findall(r"cycle\.(\w+)", inspect.getsource(WebhookProtocol)))
    own = set(WebhookProtocol.__dict__) | {"_headers_done", "_deadline", "client_ok"}
    unchecked = used - own - set(PROTOCOL_ATTRIBUTES) - set(CYCLE_ATTRIBUTES) - set(CALLBACKS)
    assert not unchecked, f"admission/protocol.py uses {sorted(unchecked)} of uvicorn's: add them above"
