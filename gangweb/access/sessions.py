"""Sessions that end everywhere: the live sockets of a browser session or of a user are told to close.

Each dashboard websocket joins two Channels groups, its session's and its user's
(``gangweb/dashboard/consumers.py``). Signing out closes the session's sockets; a changed role or
namespaces (or a deactivated user) closes the user's, after the transaction commits, and the browser
reconnects with its new scope. The consumer also re-checks its session every
``GANGWEB_SESSION_RECHECK_SECONDS``, so a lost message (channel layer down) costs at most that long.
"""

from __future__ import annotations

import hashlib
import logging

from django.db import transaction

from gangweb.events import PublishFailed, send_to_group

logger = logging.getLogger(__name__)

CLOSE_MESSAGE = "access.close"  # the consumer's ``access_close`` handler
# Websocket close codes (4000-4999 are the application's own).
CLOSE_SIGNED_OUT = 4401  # the page says "sign in"; it does not reconnect
CLOSE_SCOPE_CHANGED = 4403  # the page reconnects and gets the new scope


def user_group(user_id: int) -> str:
    return f"gangweb.access.user.{user_id}"


def session_group(session_key: str) -> str:
    # Group names are short ASCII; a digest keeps the session key itself out of the channel layer.
    return "gangweb.access.session." + hashlib.sha256(session_key.encode()).hexdigest()[:32]


def _close(group: str, code: int, reason: str) -> None:
    try:
        send_to_group(group, {"type": CLOSE_MESSAGE, "code": code, "reason": reason})
    except PublishFailed as exc:  # the periodic re-check closes them instead
        logger.warning("could not tell open sockets to close: %s", exc, extra={"group": group})


def end_session(session_key: str | None, reason: str = "signed out") -> None:
    if session_key:
        transaction.on_commit(lambda: _close(session_group(session_key), CLOSE_SIGNED_OUT, reason))


def scope_changed(user_id: int, reason: str = "role or namespaces changed") -> None:
    transaction.on_commit(lambda: _close(user_group(user_id), CLOSE_SCOPE_CHANGED, reason))


def end_for_user(user_id: int, reason: str = "signed out everywhere") -> None:
    transaction.on_commit(lambda: _close(user_group(user_id), CLOSE_SIGNED_OUT, reason))
